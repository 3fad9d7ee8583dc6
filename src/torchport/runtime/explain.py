"""Turn "Expected all tensors to be on the same device" into which tensor, from where, and why.

The exception keeps its type, its traceback and its original message; torchport adds, below the
message, each tensor argument's device and origin, the module that was running, and the fix.
"""

from __future__ import annotations

import contextlib
import inspect
from typing import Any

import torch

from torchport.findings import Finding, Fix, Location
from torchport.rules.device import CpuGeneratorForDeviceTensor, TensorsOnDifferentDevices
from torchport.rules.dtype import DtypeErrorAtRunTime
from torchport.runtime import holders
from torchport.runtime.modules import ModuleTracker, StateSites, weight_device
from torchport.runtime.optimizers import OptimizerSites
from torchport.runtime.sites import Provenance, Site, call_name

_DEVICE_WORDS = ("same device", "device type", "different device", "on device")
_DTYPE_WORDS = ("same dtype", "scalar type", "dtype", "Input type")
_VALUE_FIXES = {
    "without overflow": (
        "keep values within the dtype's range: torch.finfo(t.dtype).min instead of -1e9, or "
        "compute this op in float32."
    ),
    # before the general entry: CUDA's QR (pca_lowrank, svd_lowrank) has no half kernel, and
    # CUDA autocast hands it the float16 output of the matmul before it
    '"geqrf_cuda" not implemented': (
        "run it outside autocast on float32: `with torch.autocast(device.type, "
        "enabled=False): torch.pca_lowrank(x.float(), ...)`."
    ),
    "not implemented for": "compute it in a dtype the device has a kernel for (.float()).",
    "unsafe to autocast": (
        "drop the sigmoid and apply BCEWithLogitsLoss (binary_cross_entropy_with_logits) to "
        "the logits, which autocast runs in float32."
    ),
}


def tensor_arguments(
    func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> list[tuple[str, torch.Tensor]]:
    """Each tensor argument with the name the user would recognise (``input``, ``weight``…)."""
    names = _parameter_names(func)
    found: list[tuple[str, torch.Tensor]] = []
    for index, value in enumerate(args):
        label = names[index] if index < len(names) else f"argument {index}"
        if index == 0 and call_name(func).startswith("Tensor."):
            label = "self"
        _collect(label, value, found)
    for key, value in kwargs.items():
        _collect(key, value, found)
    return found


# Operator slots (``a == b``, ``a[i]``, ``a[i] = v``) have no Python signature, and their
# dunder names are no aten op: name their arguments as the aten op they run does.
_SLOT_ARGUMENTS = {"__getitem__": ["self", "indices"], "__setitem__": ["self", "indices", "values"]}


def _parameter_names(func: Any) -> list[str]:
    """Python signature names, or the aten schema's for builtins (``input``, ``weight``…)."""
    name = getattr(func, "__name__", "")
    if not isinstance(name, str):
        return []
    if name.startswith("__") and name.endswith("__"):
        return list(_SLOT_ARGUMENTS.get(name, ["self", "other"]))
    try:
        return list(inspect.signature(func).parameters)
    except (TypeError, ValueError):
        pass
    packet = getattr(torch.ops.aten, name, None) if name else None
    if not isinstance(packet, torch._ops.OpOverloadPacket):
        return []
    overloads = packet.overloads()  # type: ignore[no-untyped-call]
    if not overloads:
        return []
    schema = getattr(packet, overloads[0])._schema
    return [a.name for a in schema.arguments]


def _collect(label: str, value: Any, found: list[tuple[str, torch.Tensor]]) -> None:
    if isinstance(value, torch.Tensor):
        found.append((label, value))
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            if isinstance(item, torch.Tensor):
                found.append((f"{label}[{i}]", item))


class Explainer:
    """Enriches device and dtype errors in place, and records them as TP150 findings."""

    def __init__(self, provenance: Provenance, tracker: ModuleTracker) -> None:
        self._provenance = provenance
        self._tracker = tracker
        self.state_sites = StateSites()
        self.optimizer_sites = OptimizerSites()
        # where the program called torch.set_default_device with an accelerator, if it did
        self.default_device_set_at: Site | None = None

    def explain(
        self,
        exc: BaseException,
        func: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        site: Site | None,
    ) -> Finding | None:
        if getattr(exc, "_torchport_explained", False) or not exc.args:
            return None
        text = str(exc.args[0])
        if "device type for generator" in text:
            if "Expected a 'cpu' device type" in text:
                return self._device_generator_on_host(func, site)
            return self._host_generator(func, site)
        tensors = tensor_arguments(func, args, kwargs)
        devices = {t.device for _, t in tensors}
        dtypes = {t.dtype for _, t in tensors}
        about_devices = len(devices) > 1 and any(w in text for w in _DEVICE_WORDS)
        about_dtypes = len(dtypes) > 1 and any(w in text for w in _DTYPE_WORDS)
        # a value that does not fit the dtype, or a kernel the device lacks for it
        value_fix = next((fix for w, fix in _VALUE_FIXES.items() if w in text), None)
        about_values = value_fix is not None and bool(tensors)
        if not (about_devices or about_dtypes or about_values):
            return None
        where = f" at {site}" if site is not None else ""
        lines = ["", f"torchport: {call_name(func)}{where} was given:"]
        lines += [f"  - {label}: {self._describe(t)}" for label, t in tensors]
        running = self._running()
        if running:
            lines.append(f"  while running {running}")
        if value_fix is not None and not about_devices:
            fix = value_fix
        else:
            fix = self._fix(tensors, about_devices)
        lines.append(f"  fix: {fix}")
        exc.args = (text + "\n".join(lines), *exc.args[1:])
        with contextlib.suppress(AttributeError):
            exc._torchport_explained = True  # type: ignore[attr-defined]
        if not about_devices:
            return DtypeErrorAtRunTime.finding(
                f"{call_name(func)} failed on its dtypes ({text.splitlines()[0][:160]}): "
                + "; ".join(f"{label} is {_dtype(t)} ({self._origin(t)})" for label, t in tensors),
                None if site is None else site.location(),
                Fix(fix),
                related=self._made_at(tensors, site, all_devices=True),
            )
        # where the device side is the odd one out (a hidden state made on "cuda" for a model
        # kept on the CPU), where it was made is where to look too
        on_host = sum(t.device.type == "cpu" for _, t in tensors)
        return TensorsOnDifferentDevices.finding(
            f"{call_name(func)} got tensors on "
            f"{' and '.join(sorted(str(d) for d in devices))}: "
            + "; ".join(f"{label} on {t.device} ({self._origin(t)})" for label, t in tensors),
            None if site is None else site.location(),
            Fix(fix),
            related=self._made_at(tensors, site, all_devices=len(tensors) - on_host < on_host),
        )

    def _made_at(
        self, tensors: list[tuple[str, torch.Tensor]], site: Site | None, all_devices: bool = False
    ) -> tuple[Location, ...]:
        """Where the host tensors (or all) among ``tensors`` were created, other than at
        ``site``."""
        chosen = (t for _, t in tensors if all_devices or t.device.type == "cpu")
        stack = self._tracker.stack
        # where the tensor was made, and where the module holding it was built (the weight
        # given to a loss never moved is made in one place and held from another)
        made = (
            m
            for t in chosen
            for m in (
                self._made(t),
                self.optimizer_sites.loaded_at(t),
                # a view of a module's tensor (`self.token.expand(b, -1, -1)`) is held there too
                self.state_sites.site_of(_viewed(t), stack),
                self.state_sites.made_at(_viewed(t), stack),
                self._provenance.copied_at(t) if t.device.type == "cpu" else None,
                self._provenance.kept_at(t) if t.device.type == "cpu" else None,
                self.state_sites.holder_made_at(t) if t.device.type == "cpu" else None,
                self._computed_in_unmoved(t, stack),
            )
        )
        places = {m.location() for m in made if m is not None and m != site}
        places |= {held.location() for held in self._held_at(tensors, all_devices)}
        return tuple(sorted(places, key=lambda loc: (loc.path, loc.line)))

    def _held_at(self, tensors: list[tuple[str, torch.Tensor]], all_devices: bool) -> list[Site]:
        """The assignments of the attributes that keep the host tensors out of ``.to()``: a
        plain tensor attribute, or the plain list or dict holding the running layer."""
        stack = self._tracker.stack
        out: list[Site] = []
        for _, tensor in tensors:
            if not (all_devices or tensor.device.type == "cpu"):
                continue
            for module in reversed(stack):
                name = _attribute_name(module, tensor)
                if name is not None:
                    out += holders.assignment_sites(module, name)
                    break
        holder = holders.unregistered_holder(stack)
        if holder is not None and any(t.device.type == "cpu" for _, t in tensors):
            out += holders.assignment_sites(*holder)
        return out

    def _device_generator_on_host(self, func: Any, site: Site | None) -> Finding:
        return CpuGeneratorForDeviceTensor.finding(
            f"{call_name(func)} draws on the host with a generator of the device, which torch "
            "refuses (\"Expected a 'cpu' device type for generator but found 'cuda'\"): pass "
            "`device=` of the generator's device, or draw with a CPU generator",
            None if site is None else site.location(),
            Fix("make the tensor where the generator is: device=generator.device"),
        )

    def _host_generator(self, func: Any, site: Site | None) -> Finding:
        # torch.set_default_device may have put the draw there (a shuffling sampler's
        # randperm, drawn with the loader's CPU generator): then that line is where to look
        default = self.default_device_set_at
        why = "" if default is None else f" (the default device set at line {default.line})"
        return CpuGeneratorForDeviceTensor.finding(
            f"{call_name(func)} draws on the device{why} with a CPU torch.Generator, which CUDA "
            "refuses (\"Expected a 'cuda' device type for generator but found 'cpu'\")",
            None if site is None else site.location(),
            Fix("make the generator on the device: torch.Generator(device=device)"),
            related=() if default is None else (default.location(),),
        )

    def _running(self) -> str:
        module = self._tracker.current
        if module is None:
            return ""
        device = weight_device(module)
        weights = f", weights on {device}" if device is not None else ""
        return f"{self._tracker.path(module)} ({type(module).__name__}{weights})"

    def _describe(self, tensor: torch.Tensor) -> str:
        shape = tuple(tensor.shape)
        dtype = str(tensor.dtype).replace("torch.", "")
        return f"on {tensor.device}, {dtype}, shape {shape}; {self._origin(tensor)}"

    def _origin(self, tensor: torch.Tensor) -> str:
        owner = self._owner(tensor)
        if owner:
            return owner
        site = self._made(tensor)
        made = f"created at {site} by {site.call}" if site is not None else ""
        loaded = self.optimizer_sites.loaded_at(tensor) if site is None else None
        if loaded is not None:
            made = f"optimizer state loaded at {loaded}, on its parameters' device at that time"
        copied = self._provenance.copied_at(tensor) if tensor.device.type == "cpu" else None
        if copied is not None:
            made = f"{made}; " if made else ""
            return f"{made}copied to the device at {copied}, a copy that was not kept"
        kept = self._provenance.kept_at(tensor) if tensor.device.type == "cpu" else None
        if kept is not None:
            made = f"{made}; " if made else ""
            return f"{made}left on the host by .to() at {kept}, given the host as its device then"
        return made or "computed by an earlier op"

    def _computed_in_unmoved(
        self, tensor: torch.Tensor, stack: list[torch.nn.Module]
    ) -> Site | None:
        """A host tensor of no known origin computed inside a module left on the host: where
        that module was made."""
        if tensor.device.type != "cpu" or self._made(tensor) is not None:
            return None
        return self.state_sites.left_on_host_at(stack)

    def _made(self, tensor: torch.Tensor) -> Site | None:
        """Where the program made ``tensor``, or the tensor it is a view of (`k.transpose()`)."""
        site = self._provenance.get(tensor)
        return site if site is not None else self._provenance.get(_viewed(tensor))

    def _owner(self, tensor: torch.Tensor) -> str:
        """'parameter model.fc.weight', 'buffer …' or 'plain tensor attribute …' when it is one."""
        for module in reversed(self._tracker.stack):
            path = self._tracker.path(module)
            for name, param in module.named_parameters(recurse=False):
                if param is tensor:
                    return f"parameter {path}.{name}"
            for name, buf in module.named_buffers(recurse=False):
                if buf is tensor:
                    return f"buffer {path}.{name}"
            attribute = _attribute_name(module, tensor)
            if attribute is not None:
                return f"plain tensor attribute {path}.{attribute} (not a registered buffer)"
        return ""

    def _fix(self, tensors: list[tuple[str, torch.Tensor]], about_devices: bool) -> str:
        if not about_devices:
            return "convert the odd one out with .to(dtype) where it is created (see above)."
        devices = [t.device for _, t in tensors]
        target = next((d for d in devices if d.type != "cpu"), devices[0])
        odd = [(label, t) for label, t in tensors if t.device != target]
        label, tensor = odd[0] if odd else tensors[0]
        module = self._tracker.current
        owner = self._owner(tensor)
        if module is not None and not self._tracker.registered_under_root(module):
            root = self._tracker.path(self._tracker.stack[0])
            return (
                f"{self._tracker.path(module)} ({type(module).__name__}) is not a registered "
                f"submodule of {root}, so {root}.to(device) never moved it: hold it in "
                "nn.ModuleList or nn.ModuleDict instead of a plain list or dict."
            )
        if owner.startswith("plain tensor attribute"):
            name = owner.split()[3].rsplit(".", 1)[-1]
            return (
                f"register it as a buffer (self.register_buffer({name!r}, ...)) so that "
                f"model.to(device) moves it with the parameters."
            )
        if owner.startswith(("parameter", "buffer")):
            return f"move the model to {target} (model.to(device)) before calling it."
        return self._fix_from_site(label, tensor, target)

    def _fix_from_site(self, label: str, tensor: torch.Tensor, target: torch.device) -> str:
        site = self._provenance.get(tensor)
        if site is None:
            return f"move {label} to {target} with .to(device) before this call."
        if site.call == "torch.load":
            return (
                f"load it onto {target}: torch.load(..., map_location=device) at {site}, or "
                "move it there with .to(device) after loading."
            )
        if site.call.startswith("torch.") and "from_numpy" not in site.call:
            return f"create it on {target}: pass device=... to {site.call} at {site}."
        return f"move it to {target} with .to(device) after it is made at {site}."


def _attribute_name(module: torch.nn.Module, tensor: torch.Tensor) -> str | None:
    """The plain attribute (not a parameter or buffer) of ``module`` that holds ``tensor``, or
    the tensor it is a view of (``self.mask[:t, :t]``)."""
    held = {id(tensor), id(_viewed(tensor))}
    return next((name for name, value in vars(module).items() if id(value) in held), None)


def _viewed(tensor: torch.Tensor) -> torch.Tensor:
    """The tensor ``tensor`` is a view of, or itself."""
    return tensor if tensor._base is None else tensor._base


def _dtype(tensor: torch.Tensor) -> str:
    return str(tensor.dtype).replace("torch.", "")


def add_line(exc: BaseException, line: str) -> None:
    """Append ``line`` to the message of ``exc`` (or a note, when its message is no string)."""
    if exc.args and isinstance(exc.args[0], str):
        exc.args = (f"{exc.args[0]}\n{line}", *exc.args[1:])
        return
    add_note = getattr(exc, "add_note", None)
    if add_note is not None:
        add_note(line)
