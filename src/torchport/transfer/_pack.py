"""Pack many tensors into one byte buffer, so that one copy moves them all.

Each ``cudaMemcpyAsync`` costs about 5-7 µs to issue, so a batch of 256 leaves of 16 KiB spends
more time issuing copies than moving bytes. Copying the leaves into one pinned buffer on the host
(a memcpy, at tens of GB/s) and moving that buffer in one copy is much faster; on the device each
leaf is then a view into the copied buffer. Offsets are aligned so that every view is aligned for
vectorised kernels.

Every call into torch drops and retakes the GIL, which the prefetch thread shares with the
training loop; so views are made with one call each (``as_strided`` on the buffer seen as the
leaf's dtype) and the packing copies are issued as one call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

ALIGN = 256  # bytes; what the CUDA caching allocator guarantees for a fresh allocation


@dataclass(frozen=True)
class Slot:
    """Where a tensor lives in a byte buffer: a contiguous ``shape`` of ``dtype`` at ``offset``."""

    offset: int
    dtype: torch.dtype
    shape: torch.Size
    strides: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        return self.shape.numel() * self.dtype.itemsize


def can_pack(tensor: torch.Tensor) -> bool:
    """Plain dense CPU tensors only: views of bytes cannot represent the rest faithfully."""
    return (
        type(tensor) is torch.Tensor
        and tensor.is_cpu
        and tensor.layout is torch.strided
        and not tensor.requires_grad
        and not tensor.is_quantized
    )


def aligned(nbytes: int) -> int:
    return -(-nbytes // ALIGN) * ALIGN


def layout(
    specs: Sequence[tuple[torch.dtype, torch.Size]], start: int = 0
) -> tuple[list[Slot], int]:
    """A slot for each (dtype, shape), packed from byte ``start`` (aligned); and the aligned end."""
    slots = []
    offset = aligned(start)
    for dtype, shape in specs:
        slot = Slot(offset, dtype, shape, _contiguous_strides(shape))
        slots.append(slot)
        offset += aligned(slot.nbytes)
    return slots, offset


def views(buffer: torch.Tensor, slots: Sequence[Slot]) -> list[torch.Tensor]:
    """The tensor at each slot of the uint8 ``buffer`` (whose length is a multiple of ALIGN)."""
    typed: dict[torch.dtype, torch.Tensor] = {}
    out = []
    for slot in slots:
        base = typed.get(slot.dtype)
        if base is None:
            base = typed[slot.dtype] = buffer.view(slot.dtype)
        start = base.storage_offset() + slot.offset // slot.dtype.itemsize
        out.append(base.as_strided(slot.shape, slot.strides, start))
    return out


def copy_all(targets: list[torch.Tensor], sources: list[torch.Tensor]) -> None:
    """``target.copy_(source)`` for each pair, issued as one call (non-contiguous sources too)."""
    if targets:
        torch._foreach_copy_(targets, sources)


def _contiguous_strides(shape: torch.Size) -> tuple[int, ...]:
    strides = []
    step = 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))
