"""``to_device``: move every tensor of a nested batch to a device, safely and cheaply."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import torch

from torchport.transfer._device import DeviceLike, default_device
from torchport.transfer._tree import map_structure

T = TypeVar("T")
DtypeSpec = torch.dtype | Mapping[torch.dtype, torch.dtype] | None
CastTable = Mapping[torch.dtype, torch.dtype]

# The floating-point types a plain ``dtype=`` casts between. Float8 and complex are left alone:
# a blanket cast would silently change their meaning.
_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def cast_table(dtype: DtypeSpec) -> CastTable:
    """Which source dtypes become which target dtypes.

    A single floating-point ``dtype`` casts every other floating-point tensor to it and leaves
    integer and bool tensors alone: in a batch those are labels, indices and masks, which a cast
    would corrupt. To cast integers too (uint8 images to float32, say), pass a mapping such as
    ``{torch.uint8: torch.float32, torch.float64: torch.float32}``; the cast keeps values (no
    scaling by 1/255).
    """
    if dtype is None:
        return {}
    if isinstance(dtype, torch.dtype):
        if not dtype.is_floating_point:
            raise ValueError(
                f"dtype={dtype} is not floating point; to cast integer tensors pass a mapping, "
                f"e.g. dtype={{torch.int64: {dtype}}}"
            )
        return {source: dtype for source in _FLOATS if source != dtype}
    if isinstance(dtype, Mapping):
        for key, value in dtype.items():
            if not isinstance(key, torch.dtype) or not isinstance(value, torch.dtype):
                raise TypeError(f"dtype mapping must map torch.dtype to torch.dtype, got {key!r}")
        return {k: v for k, v in dtype.items() if k != v}
    raise TypeError(f"dtype must be a torch.dtype or a mapping of dtypes, got {dtype!r}")


def tensor_mover(
    device: torch.device, non_blocking: bool | None, casts: CastTable
) -> Callable[[torch.Tensor], torch.Tensor]:
    """The per-tensor move: copy first, then cast on the target device."""
    to_cpu = device.type == "cpu"

    def move(tensor: torch.Tensor) -> torch.Tensor:
        if to_cpu and tensor.is_cpu:
            moved = tensor  # the CPU fast path: no call into torch at all
        elif non_blocking is None:
            moved = tensor.to(device, non_blocking=_safe_non_blocking(tensor, to_cpu))
        else:
            moved = tensor.to(device, non_blocking=non_blocking)
        target = casts.get(moved.dtype) if casts else None
        return moved if target is None else moved.to(target)

    return move


def _safe_non_blocking(tensor: torch.Tensor, to_cpu: bool) -> bool:
    # Safe means the host can never observe unfinished data: never for device->host (the host
    # could read before the copy lands), and host->device only from pinned memory (from pageable
    # memory it would be synchronous anyway, and slower through a pinned bounce buffer).
    if to_cpu:
        return False
    return not tensor.is_cpu or tensor.is_pinned()


class Mover:
    """``to_device`` with its arguments checked once, for calling on every batch of a loop."""

    def __init__(
        self, device: DeviceLike | None, non_blocking: bool | None, dtype: DtypeSpec
    ) -> None:
        self.device = default_device() if device is None else torch.device(device)
        self.non_blocking = non_blocking
        self.move_tensor = tensor_mover(self.device, non_blocking, cast_table(dtype))

    def move_object(self, owner: Any) -> Any:
        if self.non_blocking:
            return owner.to(self.device, non_blocking=True)
        return owner.to(self.device)

    def __call__(self, obj: T) -> T:
        result: T = map_structure(obj, self.move_tensor, self.move_object)
        return result


def to_device(
    obj: T,
    device: DeviceLike | None,
    *,
    non_blocking: bool | None = None,
    dtype: DtypeSpec = None,
) -> T:
    """``obj`` with every tensor inside it on ``device``; containers keep their types.

    ``device=None`` means :func:`default_device`, as in ``DeviceLoader``.

    ``obj`` may nest dicts (OrderedDict, defaultdict), lists, tuples (namedtuples and other
    subclasses), sets, frozensets, deques and dataclasses (frozen too) to any depth; objects with
    their own ``.to()`` method are moved by it (with the device only: ``dtype`` applies to
    tensors); anything else (strings, numbers, arrays) is returned untouched. Containers are
    rebuilt, never changed in place. No tensor is left behind silently: a container holding
    tensors that cannot be rebuilt (a mappingproxy, a tuple subclass whose constructor takes
    something else than its items) raises TypeError, a batch that contains itself ValueError,
    each naming the place in the batch (``batch['x'][2]``).

    ``non_blocking=None`` picks the safe choice per tensor: asynchronous only host->device from
    pinned memory or device->device, never device->host. ``True``/``False`` force it.
    ``dtype`` casts after the copy, on the target device: see :func:`cast_table` for which
    tensors a dtype or a mapping of dtypes applies to.
    """
    return Mover(device, non_blocking, dtype)(obj)
