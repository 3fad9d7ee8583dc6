"""A tensor that keeps its data on the CPU and reports a simulated accelerator device.

To the C++ core a :class:`SimTensor` is an ordinary CPU tensor (reporting CUDA there crashes
autograd on a CPU-only build); only Python sees ``device``, ``is_cuda`` and ``get_device()`` of the
simulated device. Every aten op reaches :meth:`SimTensor.__torch_dispatch__`, which checks devices
the way the real backend does, runs the op on the CPU data and labels the results. Moving between
host and simulated device goes through autograd functions, so gradients come back across.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any, ClassVar

import torch

from torchport.runtime import simdevices, simhost, simkernels, simlazy
from torchport.runtime.simdevices import Seen

_CPU = torch.device("cpu")
simhost.own_file(__file__)
_make_wrapper = torch.Tensor._make_wrapper_subclass
# Called with a description when Python reads a simulated tensor's value without going through
# torch (repr, format): the simulation counts these as synchronizations.
SYNC_HOOKS: list[Callable[[str], None]] = []
# Non-empty while the observer runs a read it counts itself (``.item()``, ``bool(t)``): the
# value read below it is that same synchronization, not a second one.
EXPLICIT_READS: list[bool] = []
_SCALAR_READ = torch.ops.aten._local_scalar_dense.default
# While torch.save runs (SAVING is not empty): storage data pointer -> the simulated device of
# the tensors saved on it, read by torch.save's location tag.
SAVING: list[bool] = []
SAVED_DEVICES: dict[int, torch.device] = {}


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
        if func in simkernels.CHECKED:
            simkernels.check(func, args)
        elif func is _SCALAR_READ and not EXPLICIT_READS:
            # torch read a device value as a number for the host (a size, a count, a step
            # given as a tensor: ``torch.linspace(0, 1, h)``): a GPU synchronizes there too
            for hook in SYNC_HOOKS:
                hook("a tensor read as a number (a size or count argument)")
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
            seen = simdevices.without_host_argument(func, args, kwargs or {}, seen)
        device = simdevices.common_device(func, seen)
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
    if simlazy.is_lazy(tensor):
        return simlazy.sent_to(tensor, device)  # a lazy module's weight, not made yet
    if tensor.requires_grad and torch.is_grad_enabled():
        result: torch.Tensor = _ToSimulated.apply(tensor, device)  # type: ignore[no-untyped-call]
        return result
    source = tensor._inner if isinstance(tensor, SimTensor) else tensor
    return SimTensor(source.detach().clone(), device)


# Torch functions that take some tensors on the host beside device ones and move them on a GPU
# themselves: ctc_loss takes its targets to the device and reads the lengths on the host. Given
# a SimTensor (a tensor subclass), ctc_loss goes down its composite path instead, which would
# mix the devices; the simulation hands it those arguments on the device, where the GPU path
# has them. function -> the names of those arguments, the positional ones after the first.
HOST_TOLERANT: dict[Any, tuple[str, ...]] = {
    func: ("targets", "input_lengths", "target_lengths")
    for func in (torch.nn.functional.ctc_loss, torch.ctc_loss)
}


def host_arguments_onto_device(
    handler: Callable[[Any, tuple[Any, ...], dict[str, Any]], Any],
    func: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    """Call ``handler`` with ``func``'s host-tolerant arguments on the simulated device of its
    first argument (see HOST_TOLERANT); unchanged when that is not a simulated tensor."""
    first = args[0] if args else kwargs.get("log_probs")
    if not isinstance(first, SimTensor):
        return handler(func, args, kwargs)
    names, device = HOST_TOLERANT[func], first._sim_device

    def moved(value: Any) -> Any:
        return to_simulated(value, device) if type(value) is torch.Tensor else value

    args = (*args[:1], *(moved(a) for a in args[1 : len(names) + 1]), *args[len(names) + 1 :])
    kwargs = {k: moved(v) if k in names else v for k, v in kwargs.items()}
    return handler(func, args, kwargs)


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
