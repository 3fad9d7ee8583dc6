"""The CUDA stage of DeviceLoader: pinned staging, packed copies on a side stream, events.

Per batch, on the prefetch thread:

1. every plain CPU leaf, except large leaves that are already pinned, is packed into one pinned
   staging buffer (a host memcpy; torch releases the GIL for it);
2. the device memory is allocated *on the consumer's stream*, and the side stream waits for an
   event recorded there. The memory therefore belongs to the consumer like any tensor it made
   itself: no ``record_stream`` (which delays frees and over-allocates, pytorch#147168), and the
   batch stays valid for as long as the user keeps it;
3. one ``non_blocking`` copy per staging buffer (plus one per large pinned leaf) on the side
   stream, then the dtype casts, on the device, into memory allocated the same way;
4. an event recorded after the last of these; ``deliver`` makes the consumer's current stream
   wait on it, which is what makes the batch safe to use there.

Two staging buffers alternate: one is filled while the other's copy is in flight, and a buffer is
refilled only after the event of its last copy has completed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from torchport.transfer import _pack
from torchport.transfer._to_device import CastTable, Mover
from torchport.transfer._tree import map_structure

# Pinned leaves at least this large are copied directly: packing them would add a host memcpy
# that costs more than issuing one more copy.
DIRECT_BYTES = 1 << 20


@dataclass
class _Staging:
    buffer: torch.Tensor | None = None
    copied: torch.cuda.Event | None = None


@dataclass
class Staged:
    batch: Any
    ready: torch.cuda.Event
    keepalive: list[torch.Tensor] = field(default_factory=list)
    # ids of the tensors this stage moved; None when it moved every tensor and no .to() owner
    handled: frozenset[int] | None = None


class CudaStage:
    """``produce`` runs on the prefetch thread, ``deliver`` on the consumer's."""

    def __init__(
        self,
        device: torch.device,
        side: torch.cuda.Stream,
        casts: CastTable,
        mover: Mover,
    ) -> None:
        self.device, self.side, self.casts, self.mover = device, side, casts, mover
        self.consumer = torch.cuda.current_stream(device)
        self._staging = (_Staging(), _Staging())
        self._turn = 0

    def produce(self, batch: Any) -> Staged:
        leaves: list[torch.Tensor] = []
        objects: list[Any] = []
        map_structure(batch, leaves.append, objects.append)
        with torch.cuda.device(self.device):
            moved, keepalive, ready = self._move(leaves)
        results = iter(moved)
        out = map_structure(batch, lambda _: next(results), lambda o: o)
        handled = None
        if objects or any(a is b for a, b in zip(moved, leaves, strict=True)):
            handled = frozenset(
                id(m) for m, leaf in zip(moved, leaves, strict=True) if m is not leaf
            )
        return Staged(out, ready, keepalive, handled)

    def deliver(self, staged: Staged) -> Any:
        torch.cuda.current_stream(self.device).wait_event(staged.ready)
        staged.keepalive.clear()  # safe now: the consumer's stream is ordered after the copies
        if staged.handled is None:
            return staged.batch
        # What the stage could not move (.to() owners, tensors needing autograd, tensors already
        # on a device) is moved here, on the consumer's stream, by the to_device rules.
        handled, move = staged.handled, self.mover.move_tensor
        return map_structure(
            staged.batch, lambda t: t if id(t) in handled else move(t), self.mover.move_object
        )

    def abandon(self, staged: list[Any]) -> None:
        # Memory of undelivered batches returns to the consumer stream's pool: order that stream
        # after the side stream first, so a later allocation cannot race a pending copy.
        self.consumer.wait_stream(self.side)
        staged.clear()

    def _move(
        self, leaves: list[torch.Tensor]
    ) -> tuple[list[torch.Tensor], list[torch.Tensor], torch.cuda.Event]:
        packed, direct = _split(leaves)
        slots, total = _pack.plan([leaves[i] for i in packed])
        staging = self._next_staging(total) if total else None
        if staging is not None:
            _pack.pack([leaves[i] for i in packed], slots, staging)
        with torch.cuda.stream(self.consumer):
            raw = torch.empty(total, dtype=torch.uint8, device=self.device)
            targets = {i: self._empty(leaves[i].shape, leaves[i].dtype) for i in direct}
            casts = {
                i: self._empty(leaves[i].shape, self.casts[leaves[i].dtype])
                for i in packed + direct
                if leaves[i].dtype in self.casts
            }
            allocated = self.consumer.record_event()
        self.side.wait_event(allocated)
        moved = list(leaves)
        with torch.cuda.stream(self.side):
            if staging is not None:
                raw.copy_(staging[:total], non_blocking=True)
                self._staging[self._turn].copied = self.side.record_event()
            for i, slot in zip(packed, slots, strict=True):
                moved[i] = _pack.view(raw, slot)
            for i, target in targets.items():
                moved[i] = target.copy_(leaves[i], non_blocking=True)
            # Casts run on the device, after the copy: the bus carries the smaller source type
            # for uint8 images, and the host thread does no arithmetic.
            for i, cast in casts.items():
                moved[i] = cast.copy_(moved[i])
            ready = self.side.record_event()
        keepalive = [raw, *targets.values(), *(leaves[i] for i in direct)]
        return moved, keepalive, ready

    def _empty(self, shape: torch.Size, dtype: torch.dtype) -> torch.Tensor:
        return torch.empty(shape, dtype=dtype, device=self.device)

    def _next_staging(self, nbytes: int) -> torch.Tensor:
        self._turn = 1 - self._turn
        staging = self._staging[self._turn]
        if staging.copied is not None:
            staging.copied.synchronize()  # the buffer's previous copy must have landed
        if staging.buffer is None or staging.buffer.numel() < nbytes:
            # Grow geometrically so that a slowly growing batch does not re-pin every time.
            size = max(nbytes, 2 * (0 if staging.buffer is None else staging.buffer.numel()))
            staging.buffer = torch.empty(size, dtype=torch.uint8, pin_memory=True)
        return staging.buffer


def _split(leaves: list[torch.Tensor]) -> tuple[list[int], list[int]]:
    """Indices of the leaves to pack and of those to copy directly; the rest stay put."""
    packed, direct = [], []
    for i, tensor in enumerate(leaves):
        if not _pack.can_pack(tensor):
            continue
        large = tensor.numel() * tensor.element_size() >= DIRECT_BYTES
        if large and tensor.is_pinned():
            direct.append(i)
        else:
            packed.append(i)
    return packed, direct
