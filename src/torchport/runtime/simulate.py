"""``--simulate cuda|cuda:N|mps``: pretend an accelerator on a CPU-only machine.

The device queries (``torch.cuda.is_available()`` and friends, ``torch.accelerator``), pinned
memory, streams, events and autocast are patched here; tensor placement is routed by the
observer's function mode through :mod:`torchport.runtime.simtensor`. Everything patched is put
back by :meth:`Simulation.restore`.
"""

from __future__ import annotations

import functools
import re
import sys
import warnings
import weakref
from collections.abc import Callable
from typing import Any

import torch
from torch.utils.weak import WeakIdKeyDictionary

from torchport.errors import UsageError
from torchport.findings import Location
from torchport.runtime import simgenerator, simkernels, simlazy, simtensor
from torchport.runtime.simdevices import device_error
from torchport.runtime.simload import save_load_patches
from torchport.runtime.simparallel import comm_patches, process_group_patches
from torchport.runtime.simtensor import SYNC_HOOKS, SimTensor

_SPEC = re.compile(r"^(cuda|mps)(?::(\d+))?$")
_MISSING = object()


def parse_spec(spec: str) -> tuple[str, int]:
    """``cuda`` → (cuda, 1), ``cuda:4`` → (cuda, 4), ``mps`` → (mps, 1); UsageError otherwise."""
    match = _SPEC.match(spec.strip().lower())
    if match is None or (match.group(1) == "mps" and match.group(2)):
        raise UsageError(f"--simulate: expected cuda, cuda:N (N GPUs) or mps, got {spec!r}")
    count = int(match.group(2) or 1)
    if count < 1:
        raise UsageError("--simulate: the number of simulated GPUs must be at least 1")
    return match.group(1), count


class _SimStream:
    """Stream stand-in: work is synchronous on the CPU, so every query is 'done'."""

    def __init__(self, device: Any = None, priority: int = 0, **_: Any) -> None:
        self.device = device

    def synchronize(self) -> None:
        if SIMULATIONS:
            SIMULATIONS[-1].on_sync("Stream.synchronize")

    def wait_stream(self, stream: Any) -> None:
        return None

    def wait_event(self, event: Any) -> None:
        return None

    def record_event(self, event: Any = None) -> _SimEvent:
        return event if isinstance(event, _SimEvent) else _SimEvent()

    def query(self) -> bool:
        return True

    def is_capturing(self) -> bool:
        return False

    def __enter__(self) -> _SimStream:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class _SimEvent:
    def __init__(self, enable_timing: bool = False, **_: Any) -> None:
        self._time = 0.0

    def record(self, stream: Any = None) -> None:
        import time

        self._time = time.perf_counter()

    def synchronize(self) -> None:
        if SIMULATIONS:
            SIMULATIONS[-1].on_sync("Event.synchronize")

    def wait(self, stream: Any = None) -> None:
        return None

    def query(self) -> bool:
        return True

    def elapsed_time(self, end: _SimEvent) -> float:
        return (end._time - self._time) * 1000.0


SIMULATIONS: list[Simulation] = []


class Simulation:
    """The simulated accelerator: its devices, the patches that announce it, pinned memory."""

    def __init__(self, spec: str, on_sync: Callable[[str], None] | None = None) -> None:
        self.kind, self.count = parse_spec(spec)
        self.current = 0
        self.pinned: WeakIdKeyDictionary = WeakIdKeyDictionary()
        self._on_sync = on_sync
        self._saved: list[tuple[Any, str, Any]] = []
        self._future_flag = False
        self.unsupported: list[str] = []
        self.uses = 0  # how often `resolve` named a simulated device
        self.nccl = False  # the program's default group is NCCL (run on gloo here)
        self.host_groups: list[Any] = []  # process groups it made on gloo, host tensors welcome
        # `torch.set_default_device("cuda")`: the observer puts factories there
        self.default_device: torch.device | None = None
        # where the program made a tensor (the observer's provenance, set by the watch)
        self.made_at: Callable[[torch.Tensor], Location | None] = lambda tensor: None

    def on_sync(self, what: str) -> None:
        if self._on_sync is not None:
            self._on_sync(what)

    # --- devices ---------------------------------------------------------------------------
    def resolve(self, device: Any) -> torch.device | None:
        """The simulated device ``device`` names, or None when it names another type."""
        if isinstance(device, int) and not isinstance(device, bool):
            device = torch.device(self.kind, device)
        if not isinstance(device, (str, torch.device)):
            return None
        target = torch.device(device)
        if target.type != self.kind:
            return None
        index = self.current if target.index is None else target.index
        if index >= self.count:
            name = "CUDA" if self.kind == "cuda" else "MPS"
            raise device_error(
                f"{name} error: invalid device ordinal (torchport simulates "
                f"{self.count} {self.kind} device{'s' if self.count > 1 else ''})"
            )
        self.uses += 1
        return torch.device(self.kind, index)

    @property
    def default(self) -> torch.device:
        return torch.device(self.kind, self.current)

    # --- patches ---------------------------------------------------------------------------
    def install(self) -> None:
        self._future_flag = torch.__future__.get_overwrite_module_params_on_conversion()
        # Module.to would otherwise copy the data into the old CPU parameter, dropping SimTensor
        # (where _keep_parameters cannot swap it in place).
        torch.__future__.set_overwrite_module_params_on_conversion(True)
        for owner, name, value in self._patches():
            self._patch(owner, name, value)
        SIMULATIONS.append(self)
        SYNC_HOOKS.append(self.on_sync)

    def restore(self) -> None:
        for owner, name, old in reversed(self._saved):
            if old is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, old)
        self._saved.clear()
        if self.default_device is not None:  # the program left it set: torch's was None
            self.default_device = None
        torch.__future__.set_overwrite_module_params_on_conversion(self._future_flag)
        if self in SIMULATIONS:
            SIMULATIONS.remove(self)
        if self.on_sync in SYNC_HOOKS:
            SYNC_HOOKS.remove(self.on_sync)

    def _patch(self, owner: Any, name: str, value: Any) -> None:
        self._saved.append((owner, name, owner.__dict__.get(name, _MISSING)))
        setattr(owner, name, value)

    def _patches(self) -> list[tuple[Any, str, Any]]:
        patches = self._tensor_patches() + self._accelerator_patches()
        if self.kind == "cuda":
            patches += self._cuda_patches() + comm_patches(self) + process_group_patches(self)
        else:
            patches += [(torch.backends.mps, "is_available", lambda: True)]
            patches += [(torch.mps, "synchronize", self._synchronize)]
        patches += [(torch, "Generator", simgenerator.generator_class(self.resolve))]
        patches += self._default_device_patches()
        autocast = torch.amp.autocast_mode.autocast
        patches += [(autocast, "__init__", self._autocast_init())]
        patches += [(autocast, "__enter__", _tracked_enter(autocast.__enter__))]
        patches += [(autocast, "__exit__", _tracked_exit(autocast.__exit__))]
        patches += _autocast_queries(self.kind)
        patches += [(torch, "compile", _eager_compile), *save_load_patches(self)]
        patches += [(torch.nn.Module, "_apply", _keep_parameters(torch.nn.Module._apply))]
        patches += [(torch.nn.Module, "to", _index_as_device(torch.nn.Module.to, self.kind))]
        patches += [
            (lazy, "materialize", simlazy.materialize(lazy.materialize, simtensor.to_simulated))
            for lazy in simlazy.LAZY_CLASSES
        ]
        grouping = torch._C._group_tensors_by_device_and_dtype
        patches += [(torch._C, "_group_tensors_by_device_and_dtype", _by_simulated(grouping))]
        return patches

    def _default_device_patches(self) -> list[tuple[Any, str, Any]]:
        """``torch.set_default_device("cuda")`` would put torch's own default-device mode,
        below the observer, on a device this build lacks: the simulation keeps the device and
        hands torch ``None``; the observer gives it to the factories (see Observer._factory)."""
        original_set, original_get = torch.set_default_device, torch.get_default_device

        def set_default_device(device: Any) -> None:
            target = self.resolve(device) if device is not None else None
            self.default_device = target
            original_set(None if target is not None else device)

        def get_default_device() -> torch.device:
            return self.default_device or original_get()

        return [
            (torch, "set_default_device", set_default_device),
            (torch, "get_default_device", get_default_device),
        ]

    def _synchronize(self, device: Any = None) -> None:
        self.on_sync(f"torch.{self.kind}.synchronize")

    def _properties(self, device: Any = None) -> Any:
        import types

        return types.SimpleNamespace(
            name="NVIDIA Simulated GPU (torchport)", major=9, minor=0,
            total_memory=80 * 2**30, multi_processor_count=132, is_integrated=False,
        )  # fmt: skip

    def _set_device(self, device: Any) -> None:
        resolved = self.resolve(device)
        if resolved is not None:
            self.current = resolved.index or 0

    def _cuda_patches(self) -> list[tuple[Any, str, Any]]:
        cuda = torch.cuda
        name = "NVIDIA Simulated GPU (torchport)"
        return [
            (cuda, "is_available", lambda: True),
            (cuda, "device_count", lambda: self.count),
            (cuda, "current_device", lambda: self.current),
            (cuda, "set_device", self._set_device),
            (cuda, "synchronize", self._synchronize),
            (cuda, "get_device_name", lambda device=None: name),
            (cuda, "get_device_capability", lambda device=None: (9, 0)),
            (cuda, "is_bf16_supported", lambda including_emulation=True: True),
            (cuda, "Stream", _SimStream),
            (cuda, "Event", _SimEvent),
            (cuda, "current_stream", lambda device=None: _SimStream(device)),
            (cuda, "default_stream", lambda device=None: _SimStream(device)),
            (cuda, "stream", lambda stream=None: stream or _SimStream()),
            (cuda, "is_current_stream_capturing", lambda: False),
            (cuda, "get_device_properties", self._properties),
            (torch.backends.cudnn, "is_available", lambda: False),
            (torch.backends.cudnn, "is_acceptable", lambda tensor: False),
            (cuda, "empty_cache", lambda: None),
            (cuda, "manual_seed", lambda seed: None),
            (cuda, "manual_seed_all", lambda seed: None),
            (cuda, "memory_allocated", _unsimulated("CUDA memory statistics (reported as 0)", 0)),
            (cuda, "max_memory_allocated", _unsimulated("CUDA memory statistics", 0)),
            (cuda, "memory_reserved", _unsimulated("CUDA memory statistics", 0)),
            (cuda, "max_memory_reserved", _unsimulated("CUDA memory statistics", 0)),
            (cuda, "reset_peak_memory_stats", _unsimulated("CUDA memory statistics", None)),
            (cuda, "reset_max_memory_allocated", _unsimulated("CUDA memory statistics", None)),
        ]

    def _accelerator_patches(self) -> list[tuple[Any, str, Any]]:
        acc = getattr(torch, "accelerator", None)
        if acc is None:
            return []
        return [
            (acc, "is_available", lambda *a, **k: True),
            (acc, "current_accelerator", lambda *a, **k: torch.device(self.kind)),
            (acc, "device_count", lambda: self.count),
            (acc, "current_device_index", lambda: self.current),
            (acc, "set_device_index", self._set_device),
            (acc, "synchronize", self._synchronize),
            (acc, "current_stream", lambda device=None: _SimStream(device)),
            (acc, "set_stream", lambda stream: None),
            # Device-generic streams and events (DataParallel's scatter makes its copy streams
            # with torch.Stream): C++ refuses them without a real accelerator.
            (torch, "Stream", _SimStream),
            (torch, "Event", _SimEvent),
        ]

    def _tensor_patches(self) -> list[tuple[Any, str, Any]]:
        simulation = self

        def pin_memory(tensor: torch.Tensor, device: Any = None) -> torch.Tensor:
            if isinstance(tensor, SimTensor):
                kind = tensor._inner.type().replace("torch.", f"torch.{tensor.device.type}.", 1)
                raise device_error(f"cannot pin '{kind}' only dense CPU tensors can be pinned")
            copy = tensor.clone()
            simulation.pinned[copy] = True
            return copy

        def is_pinned(tensor: torch.Tensor, device: Any = None) -> bool:
            # A view of pinned memory (a slice of a staging buffer) is pinned too.
            base = tensor._base
            return tensor in simulation.pinned or (base is not None and base in simulation.pinned)

        return [
            (torch.Tensor, "pin_memory", pin_memory),
            (torch.Tensor, "is_pinned", is_pinned),
            (torch.Tensor, "record_stream", lambda tensor, stream: None),
        ]

    def _autocast_init(self) -> Callable[..., None]:
        original = torch.amp.autocast_mode.autocast.__init__
        kind = self.kind

        def init(obj: Any, device_type: str, *args: Any, **kwargs: Any) -> None:
            # CPU autocast runs the same casts on the CPU data, so dtype mistakes still show;
            # in the device's own default dtype (float16 on CUDA and MPS, bfloat16 on the CPU).
            if device_type == kind:
                device_type = "cpu"
                if (args[0] if args else kwargs.get("dtype")) is None:
                    args = args[1:]
                    kwargs = {**kwargs, "dtype": torch.get_autocast_dtype(kind)}
                obj._torchport_device_region = True
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                original(obj, device_type, *args, **kwargs)

        return init


def _autocast_queries(kind: str) -> list[tuple[Any, str, Any]]:
    """``torch.is_autocast_enabled("cuda")`` and ``get_autocast_dtype("cuda")`` answer for
    the simulated device's regions (which run as CPU autocast): ``custom_fwd`` reads them to
    run ``custom_bwd`` under the forward's autocast state, as on a GPU."""
    enabled, dtype = torch.is_autocast_enabled, torch.get_autocast_dtype

    def is_enabled(*args: Any) -> bool:
        if (args[0] if args else "cuda") == kind:
            return bool(simkernels.device_autocast and simkernels.device_autocast[-1])
        return bool(enabled(*args))

    def get_dtype(device_type: str) -> torch.dtype:
        if device_type == kind and simkernels.device_autocast:
            return dtype("cpu")
        return dtype(device_type)

    return [(torch, "is_autocast_enabled", is_enabled), (torch, "get_autocast_dtype", get_dtype)]


def _tracked_enter(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Keep the simulated device's autocast regions, enabled or not (simkernels reads them)."""

    def enter(region: Any) -> Any:
        entered = original(region)
        if getattr(region, "_torchport_device_region", False):
            simkernels.device_autocast.append(bool(region._enabled))
        return entered

    return enter


def _tracked_exit(original: Callable[..., Any]) -> Callable[..., Any]:
    def exit_(region: Any, *exc: Any) -> Any:
        if getattr(region, "_torchport_device_region", False) and simkernels.device_autocast:
            simkernels.device_autocast.pop()
        return original(region, *exc)

    return exit_


def _index_as_device(original: Callable[..., Any], kind: str) -> Callable[..., Any]:
    """``model.to(local_rank)``: a bare index names the accelerator, as on a GPU machine.

    ``Module.to`` parses its arguments in C++, which looks a bare index up on the real
    accelerator, and a CPU-only build has none ("Cannot access accelerator device when none is
    available"). ``Tensor.to`` goes through the observer, which resolves it already.
    """

    def is_index(value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool)

    @functools.wraps(original)
    def to(module: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
        if args and is_index(args[0]):
            args = (f"{kind}:{args[0]}", *args[1:])
        if is_index(kwargs.get("device")):
            kwargs = {**kwargs, "device": f"{kind}:{kwargs['device']}"}
        return original(module, *args, **kwargs)

    return to


def _keep_parameters(original: Callable[..., Any]) -> Callable[..., Any]:
    """``Module.to(device)`` keeps each parameter object, as it does on a GPU.

    On a GPU, ``model.to("cuda")`` sets the new data into the same ``Parameter`` (``param.data =
    ...``), so an optimizer made before the move (``self.opt = Adam(self.parameters())`` in
    ``__init__``) still updates the model's weights. A simulated tensor cannot be set in as data;
    torch's swap_tensors puts it into the same object instead. Where a parameter cannot be
    swapped (a weak reference to it, or a live graph that saved it), it is replaced as before.
    """

    future = torch.__future__
    chosen = future.get_swap_module_params_on_conversion()  # the program's own choice

    def _apply(module: torch.nn.Module, fn: Any, recurse: bool = True) -> Any:
        saved = future.get_swap_module_params_on_conversion()  # an outer module's, here
        overwrite = future.get_overwrite_module_params_on_conversion()
        lazy = any(simlazy.is_lazy(p) for p in module.parameters(recurse=False))
        future.set_swap_module_params_on_conversion(chosen or (not lazy and _swappable(module)))
        if lazy:  # a lazy weight stays the same object, set as its own data (see simlazy)
            future.set_overwrite_module_params_on_conversion(False)
        try:
            return original(module, fn, recurse)
        finally:
            future.set_swap_module_params_on_conversion(saved)
            future.set_overwrite_module_params_on_conversion(overwrite)

    return _apply


def _swappable(module: torch.nn.Module) -> bool:
    """Whether swap_tensors can take each of ``module``'s own parameters (and gradients)."""
    for param in module.parameters(recurse=False):
        grad = param.grad
        # swap_tensors' own conditions: no weak reference, and no holder of the tensor but the
        # object (and the gradient accumulator of a leaf).
        if weakref.getweakrefs(param) or param._use_count() > 2:  # type: ignore[attr-defined]
            return False
        if grad is not None and weakref.getweakrefs(grad):
            return False
    return True


def _unsimulated(what: str, value: Any) -> Callable[..., Any]:
    def stand_in(*args: Any, **kwargs: Any) -> Any:
        say_once(what)
        return value

    return stand_in


def _eager_compile(model: Any = None, **options: Any) -> Any:
    """``torch.compile`` cannot trace the simulated tensors: the model runs eagerly instead."""
    say_once("torch.compile (the model runs eagerly)")
    if model is None:
        return lambda fn: fn
    return model


def say_once(what: str, _said: set[str] = set()) -> None:  # noqa: B006 - a process-wide memo
    """Tell the user, once per process, that ``what`` cannot be simulated."""
    if what not in _said:
        _said.add(what)
        print(f"torchport: --simulate cannot simulate {what}; carrying on.", file=sys.stderr)


Grouped = dict[tuple[torch.device, torch.dtype], tuple[list[list[Any]], list[int]]]


def _by_simulated(grouping: Callable[..., Grouped]) -> Callable[..., Grouped]:
    """torch's grouping of tensors by device (clip_grad_norm_, foreach optimizers, GradScaler)
    reads the real CPU device in C++; split its groups by the simulated device, as on a GPU."""

    def group(tensorlistlist: list[list[Any]], with_indices: bool = False) -> Grouped:
        grouped = grouping(tensorlistlist, with_indices)
        out: Grouped = {}
        for (device, dtype), (lists, indices) in grouped.items():
            for j, first in enumerate(lists[0]):
                key = (first.device if isinstance(first, SimTensor) else device, dtype)
                slot = out.get(key)
                if slot is None:
                    slot = out[key] = ([[] for _ in lists], [])
                for k, tensors in enumerate(lists):
                    if tensors:
                        slot[0][k].append(tensors[j])
                if with_indices:
                    slot[1].append(indices[j])
        return out

    return group
