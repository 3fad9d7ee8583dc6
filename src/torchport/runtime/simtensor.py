"""A tensor that keeps its data on the CPU and reports a simulated accelerator device.

To the C++ core a :class:`SimTensor` is an ordinary CPU tensor (reporting CUDA there crashes
autograd on a CPU-only build); only Python sees ``device``, ``is_cuda`` and ``get_device()`` of the
simulated device. Every aten op reaches :meth:`SimTensor.__torch_dispatch__`, which checks devices
the way the real backend does, runs the op on the CPU data and labels the results. Moving between
host and simulated device goes through autograd functions, so gradients come back across.
"""

from __future__ import annotations

import os
import sys
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, ClassVar

import torch

from torchport.runtime import simhost

_CPU = torch.device("cpu")
simhost.own_file(__file__)
_make_wrapper = torch.Tensor._make_wrapper_subclass
# Called with a description when Python reads a simulated tensor's value without going through
# torch (repr, format): the simulation counts these as synchronizations.
SYNC_HOOKS: list[Callable[[str], None]] = []
# While torch.save runs (SAVING is not empty): storage data pointer -> the simulated device of
# the tensors saved on it, read by torch.save's location tag.
SAVING: list[bool] = []
SAVED_DEVICES: dict[int, torch.device] = {}
_aten = torch.ops.aten
# Ops whose tensors may sit on different devices; the result lives where ``self`` (or the
# ``device`` argument) says.
_CROSS_DEVICE_OK = {_aten.copy_.default, _aten._to_copy.default, _aten.lift_fresh.default}
# Advanced indexing. Reading (``x[i]``) accepts index tensors on the CPU or on x's device
# (ATen's check_indices_on_cpu_or_selfdevice); writing (``x[i] = v``, and the backward of a read)
# moves index tensors of any device to x's (ATen's make_info, "Ensure indices are on the same
# device as self") and a one-element 0-dim value too; any other value must be on x's device.
_INDEX_READ = {_aten.index.Tensor, _aten.index.Tensor_out, _aten._unsafe_index.Tensor}
_INDEX_WRITE = {
    _aten.index_put.default,
    _aten.index_put_.default,
    _aten._index_put_impl_.default,
    _aten._unsafe_index_put.default,
}


def device_error(message: str, kind: type[Exception] = RuntimeError) -> Exception:
    """The error a real GPU raises here, marked as the simulation's on purpose (not a bug of
    torchport's: the tests that run whole programs tell the two apart by this mark)."""
    error = kind(message)
    error._torchport_simulated = True  # type: ignore[attr-defined]
    return error


class SimTensor(torch.Tensor):
    """CPU data (``_inner``) seen from Python as living on ``_sim_device``."""

    _inner: torch.Tensor
    _sim_device: torch.device
    __torch_function__: ClassVar[Any] = torch._C._disabled_torch_function_impl

    @staticmethod
    def __new__(
        cls, inner: torch.Tensor, device: torch.device, requires_grad: bool = False
    ) -> SimTensor:
        wrapper = _make_wrapper(
            cls,
            inner.size(),
            strides=inner.stride(),
            storage_offset=inner.storage_offset(),
            dtype=inner.dtype,
            layout=inner.layout,
            device=inner.device,
            requires_grad=requires_grad,
        )
        wrapper._inner = inner
        wrapper._sim_device = device
        return wrapper

    @property
    def device(self) -> torch.device:  # type: ignore[override]
        return self._sim_device

    @property
    def is_cuda(self) -> bool:  # type: ignore[override]
        return self._sim_device.type == "cuda"

    @property
    def is_mps(self) -> bool:  # type: ignore[override]
        return self._sim_device.type == "mps"

    @property
    def is_cpu(self) -> bool:  # type: ignore[override]
        return False

    def get_device(self) -> int:
        return self._sim_device.index or 0

    def __repr__(self, *, tensor_contents: Any = None) -> str:  # type: ignore[override]
        for hook in SYNC_HOOKS:
            hook("print(tensor)")
        text = repr(self._inner.detach())
        extra = f", device='{self._sim_device}'"
        if self.requires_grad:
            extra += ", requires_grad=True"
        return text[:-1] + extra + ")" if text.endswith(")") else text

    def __reduce_ex__(self, protocol: Any) -> Any:
        # Pickled as its plain CPU data, so checkpoints load with weights_only=True anywhere;
        # within torch.save the storage is tagged with the simulated device (see simload.py).
        if SAVING:
            SAVED_DEVICES[self._inner.untyped_storage().data_ptr()] = self._sim_device
        data = self._inner.detach()
        if getattr(self, "_is_param", False):
            return (torch._utils._rebuild_parameter, (data, self.requires_grad, OrderedDict()))
        if self.requires_grad:
            data.requires_grad_(True)
        return data.__reduce_ex__(protocol)  # type: ignore[no-untyped-call]

    def __format__(self, spec: str) -> str:
        if self.dim() == 0:
            for hook in SYNC_HOOKS:
                hook("format(tensor)")
            return self._inner.item().__format__(spec)
        return object.__format__(self, spec)

    @classmethod
    def __torch_dispatch__(  # type: ignore[override]
        cls,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        # The hot path of --simulate: nearly every op of a model already on the simulated device
        # takes the fast path; anything else (CPU tensors, lists of tensors, devices) is checked
        # in full below.
        out = _fast_dispatch(func, args, kwargs)
        if out is not _SLOW:
            return out
        wrappers: dict[int, SimTensor] = {}
        seen: Seen = []
        plain_args = [_unwrap(a, i, wrappers, seen) for i, a in enumerate(args)]
        plain_kwargs = (
            {k: _unwrap(v, k, wrappers, seen) for k, v in kwargs.items()} if kwargs else {}
        )
        if func in simhost.HOST_ARGUMENTS:
            seen = _without_host_argument(func, args, kwargs or {}, seen)
        device = _common_device(func, seen)
        target = plain_kwargs.get("device")
        # A CPU ``device`` here comes from C++ (``grad.options()`` in a backward formula), where
        # a SimTensor's options name its real CPU storage: the result stays simulated. The
        # user's own ``device=`` never gets here, the observer routes it.
        if isinstance(target, torch.device) and target.type != "cpu":
            device, plain_kwargs["device"] = target, _CPU
        out = func(*plain_args, **plain_kwargs)
        if device is None:
            return out
        if _mutates_view(func) and type(args[0]) is SimTensor:
            # transpose_, squeeze_…: the wrapper's own sizes and strides must follow its data.
            with torch._C._DisableTorchDispatch():
                func(*args, **(kwargs or {}))
        if type(out) is torch.Tensor:
            existing = wrappers.get(id(out))
            return SimTensor(out, device) if existing is None else existing
        host = simhost.HOST_OUTPUTS.get(func)
        if host is not None:
            return tuple(v if i in host else _wrap(v, device, wrappers) for i, v in enumerate(out))
        return _wrap(out, device, wrappers)


def _without_host_argument(
    func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], seen: Seen
) -> Seen:
    """``seen`` less the host argument of ``func`` (see simhost); its device's error if any."""
    message = simhost.host_argument_error(func, args, kwargs)
    if message is not None:
        raise device_error(message)
    name = simhost.HOST_ARGUMENTS[func]
    return [s for s in seen if not (s[1].type == "cpu" and _argument_name(func, s[0]) == name)]


_SLOW = object()


def _fast_dispatch(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any] | None) -> Any:
    """``func`` on the CPU data when its only tensors are positional SimTensors on one device.

    Returns ``_SLOW`` (before running anything) for every other call; results and errors are
    the same as the full path's, which this merely short-cuts.
    """
    device: torch.device | None = None
    plain_args = list(args)
    for i, arg in enumerate(args):
        if type(arg) is SimTensor:
            own = arg._sim_device
            if device is None:
                device = own
            elif own is not device and own != device:
                return _SLOW
            plain_args[i] = arg._inner
        elif isinstance(arg, torch.Tensor) or (
            isinstance(arg, (list, tuple)) and arg and isinstance(arg[0], torch.Tensor | None)
        ):
            return _SLOW
    if device is None or (kwargs and not _plain_kwargs(kwargs)) or func in simhost.HOST_ARGUMENTS:
        return _SLOW
    out = func(*plain_args, **kwargs) if kwargs else func(*plain_args)
    if _mutates_view(func):
        with torch._C._DisableTorchDispatch():
            func(*args, **(kwargs or {}))
    if type(out) is torch.Tensor:
        for arg in args:  # an in-place op hands back its own tensor: keep its wrapper
            if type(arg) is SimTensor and arg._inner is out:
                return arg
        return SimTensor(out, device)
    if out is None:
        return None
    wrappers = {id(arg._inner): arg for arg in args if type(arg) is SimTensor}
    return _wrap(out, device, wrappers)


def _plain_kwargs(kwargs: dict[str, Any]) -> bool:
    """Whether no keyword argument holds a tensor, a list of them, or a device."""
    for name, value in kwargs.items():
        if name == "device" or isinstance(value, torch.Tensor):
            return False
        if isinstance(value, (list, tuple)) and value and isinstance(value[0], torch.Tensor | None):
            return False
    return True


_VIEW_MUTATORS: dict[Any, bool] = {}


def _mutates_view(func: Any) -> bool:
    known = _VIEW_MUTATORS.get(func)
    if known is None:
        known = _VIEW_MUTATORS[func] = torch.Tag.inplace_view in func.tags
    return known


Seen = list[tuple[int | str, torch.device, bool]]  # (argument, device, is 0-dim)


def _unwrap(value: Any, where: int | str, wrappers: dict[int, SimTensor], seen: Seen) -> Any:
    if type(value) is SimTensor:
        inner = value._inner
        wrappers[id(inner)] = value
        seen.append((where, value._sim_device, inner.dim() == 0))
        return inner
    if isinstance(value, torch.Tensor):
        seen.append((where, value.device, value.dim() == 0))
        return value
    if isinstance(value, (list, tuple)) and value and isinstance(value[0], torch.Tensor | None):
        return type(value)(_unwrap(v, where, wrappers, seen) for v in value)
    return value


def _common_device(func: Any, seen: Seen) -> torch.device | None:
    """The simulated device of the op's result (None: a host result), or the error the real
    backend raises for its mix of devices."""
    if func in _CROSS_DEVICE_OK:
        return _simulated(_self_device(seen))
    if func in _INDEX_READ or func in _INDEX_WRITE:
        return _simulated(_indexing_device(func, seen))
    common: torch.device | None = None
    for where, device, zero_dim in seen:
        if zero_dim and device.type == "cpu":
            continue  # a 0-dim CPU tensor is a scalar to every backend
        if common is None:
            common = device
        elif device != common:
            if _made_on_the_host_by_torch(seen):
                return next(d for _, d, _ in seen if d.type != "cpu")
            raise device_error(mismatch_message(func, common, _argument_name(func, where), device))
    if common is None or common.type == "cpu":
        sims = [d for _, d, _ in seen if d.type != "cpu"]
        return sims[0] if sims else None
    return common


def _made_on_the_host_by_torch(seen: Seen) -> bool:
    """Whether the host tensors met are torch's own, made where a GPU makes them on the device:
    by the autograd engine in backward, or inside a composite op the user called (simhost)."""
    if len({device for _, device, _ in seen if device.type != "cpu"}) != 1:
        return False  # two simulated devices: a mismatch on any machine
    return _issued_by_autograd_engine() or simhost.made_inside_the_call()


_ENGINE_ENTRIES = {"_engine_run_backward", "backward", "grad"}


def _issued_by_autograd_engine() -> bool:
    """Whether C++ code running a backward pass issued this op (no Python frame of its own).

    There, a plain CPU tensor mixed with simulated ones was made in C++ from a simulated
    tensor's options (which name its real CPU storage): a gradient buffer of the autograd
    engine, a bucket of DDP's reducer. On a GPU it would be on the device, so the op is not a
    device mismatch. A mismatch in the forward pass, or in a Python ``backward`` of the user's,
    still raises: those have their own Python frame.
    """
    try:
        frame = sys._getframe(4)  # past this function, its caller, _common_device, dispatch
    except ValueError:  # no Python caller at all: not the engine's backward either
        return False
    code = frame.f_code
    return code.co_name in _ENGINE_ENTRIES and code.co_filename.replace(os.sep, "/").endswith(
        ("torch/autograd/graph.py", "torch/autograd/__init__.py")
    )


def _simulated(device: torch.device | None) -> torch.device | None:
    return None if device is None or device.type == "cpu" else device


def _self_device(seen: Seen) -> torch.device | None:
    return next((device for where, device, _ in seen if where in (0, "self")), None)


def _indexing_device(func: Any, seen: Seen) -> torch.device | None:
    own = _self_device(seen)
    if own is None:
        return None
    for where, device, zero_dim in seen:
        name = _argument_name(func, where)
        if name == "self" or device == own:
            continue
        if name == "indices":
            if func in _INDEX_READ and device.type != "cpu":
                raise device_error(
                    "indices should be either on cpu or on the same device as the indexed "
                    f"tensor ({own})"
                )
        elif not (name == "values" and zero_dim):
            raise device_error(mismatch_message(func, own, name, device))
    return own


def _argument_name(func: Any, where: int | str) -> str:
    if isinstance(where, str):
        return where
    arguments = func._schema.arguments
    return str(arguments[where].name) if where < len(arguments) else f"argument {where}"


def mismatch_message(func: Any, common: torch.device, name: str, other: torch.device) -> str:
    """The message the real CUDA/MPS kernel raises for an op that mixes devices."""
    if torch.Tag.pointwise in getattr(func, "tags", ()):
        return (
            "Expected all tensors to be on the same device, but found at least two devices, "
            f"{common} and {other}!"
        )
    backend = (common if common.type != "cpu" else other).type.upper()
    op = func._schema.name.split("::")[-1]
    return (
        f"Expected all tensors to be on the same device, but got {name} is on {other}, "
        f"different from other tensors on {common} "
        f"(when checking argument in method wrapper_{backend}_{op})"
    )


def _wrap(value: Any, device: torch.device, wrappers: dict[int, SimTensor]) -> Any:
    if isinstance(value, torch.Tensor) and not isinstance(value, SimTensor):
        existing = wrappers.get(id(value))
        return existing if existing is not None else SimTensor(value, device)
    if isinstance(value, (list, tuple)):
        return type(value)(_wrap(v, device, wrappers) for v in value)
    return value


class _ToSimulated(torch.autograd.Function):
    """Host (or another simulated device) → simulated device; gradients flow back."""

    @staticmethod
    def forward(ctx: Any, tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
        source = tensor._inner if isinstance(tensor, SimTensor) else tensor
        ctx.source_device = tensor.device
        return SimTensor(source.detach().clone(), device)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        plain = grad._inner if isinstance(grad, SimTensor) else grad
        if ctx.source_device.type == "cpu":
            return plain, None
        return SimTensor(plain, ctx.source_device), None


class _ToHost(torch.autograd.Function):
    """Simulated device → host: a real copy, as ``.cpu()`` makes on a GPU."""

    @staticmethod
    def forward(ctx: Any, tensor: torch.Tensor) -> torch.Tensor:
        ctx.source_device = tensor.device
        inner = tensor._inner if isinstance(tensor, SimTensor) else tensor
        return inner.detach().clone()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return SimTensor(grad, ctx.source_device)


def to_simulated(tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
    if isinstance(tensor, SimTensor) and tensor._sim_device == device:
        return tensor
    if tensor.requires_grad and torch.is_grad_enabled():
        result: torch.Tensor = _ToSimulated.apply(tensor, device)  # type: ignore[no-untyped-call]
        return result
    source = tensor._inner if isinstance(tensor, SimTensor) else tensor
    return SimTensor(source.detach().clone(), device)


def to_host(tensor: torch.Tensor) -> torch.Tensor:
    if not isinstance(tensor, SimTensor):
        return tensor
    if tensor.requires_grad and torch.is_grad_enabled():
        result: torch.Tensor = _ToHost.apply(tensor)  # type: ignore[no-untyped-call]
        return result
    return tensor._inner.detach().clone()


def onto(value: Any, device: torch.device, keep: frozenset[int] = frozenset()) -> Any:
    """``value``'s plain tensors (a tuple's, but those at ``keep``) moved to ``device``."""
    if type(value) is torch.Tensor:
        return to_simulated(value, device)
    if isinstance(value, (list, tuple)):
        items = [v if i in keep else onto(v, device) for i, v in enumerate(value)]
        return type(value)(items) if not hasattr(value, "_fields") else type(value)(*items)
    return value


def wrap_new(tensor: torch.Tensor, device: torch.device) -> SimTensor:
    """A freshly made CPU tensor (a factory's result) as a leaf on the simulated device."""
    requires_grad = tensor.requires_grad
    return SimTensor(tensor.detach(), device, requires_grad=requires_grad)


def plain(value: Any) -> Any:
    """``value`` with every SimTensor replaced by its CPU data (for host-side calls)."""
    if isinstance(value, SimTensor):
        return value._inner
    if isinstance(value, (list, tuple)):
        return type(value)(plain(v) for v in value)
    return value
