"""The CUDA stage of DeviceLoader: pinned staging, packed copies on a side stream, events.

Per batch, on the prefetch thread:

1. a plan, kept while batches keep their structure: which plain CPU leaves are packed into one
   pinned staging buffer, which large already-pinned leaves are copied directly, which are cast,
   and where each lands in the batch's single device block;
2. the packed leaves are copied into a staging buffer whose previous copy has landed (one call;
   torch releases the GIL for the memcpy);
3. the device block: allocated *on the consumer's stream*, and the side stream waits for an event
   recorded there right after. The memory belongs to the consumer like any tensor it made itself:
   no ``record_stream`` (which delays frees and over-allocates, pytorch#147168), and the batch
   stays valid for as long as the user keeps it;
4. one ``non_blocking`` copy of the staging buffer (plus one per large pinned leaf) on the side
   stream, then the dtype casts, on the device, into the same block;
5. an event recorded after the last of these; ``deliver`` makes the consumer's current stream
   wait on it, which is what makes the batch safe to use there.

Copies overlap the training step only if they do not wait for it. The event of step 3 orders the
copy after everything the consumer had queued when the block was allocated; a block allocated by
the worker once the consumer has queued step n makes the copy of batch n + 1 wait for step n, so
copy and compute take turns. So when the consumer takes a batch and nothing else is queued,
``deliver`` allocates the next batch's block *before* the step is queued, and the worker uses it.

Staging buffers are reused as soon as their copy has landed; there are at most ``depth + 1`` (one
per batch the worker may be ahead), and the worker waits only when all of them are in flight.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

import torch

from torchport.transfer import _pack
from torchport.transfer._pack import Slot
from torchport.transfer._to_device import CastTable, Mover
from torchport.transfer._tree import map_structure

# Pinned leaves at least this large are copied directly: packing them would add a host memcpy
# that costs more than issuing one more copy.
DIRECT_BYTES = 1 << 20
_PACK, _DIRECT = "pack", "direct"
_PLANS_KEPT = 8  # batch structures remembered (a smaller last batch, alternating shapes)


@dataclass(frozen=True)
class Plan:
    """Where each leaf of a batch of one structure goes; computed once per structure."""

    key: tuple[Any, ...]
    packed: tuple[int, ...]  # leaf indices packed into the staging buffer
    direct: tuple[int, ...]  # large pinned leaves, copied on their own
    cast: tuple[int, ...]  # leaves (of the two above) cast on the device
    slots: tuple[Slot, ...]  # in the device block: packed, then direct, then cast targets
    staging_bytes: int  # the packed region, laid out alike in staging buffer and block
    block_bytes: int


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
        depth: int,
    ) -> None:
        self.device, self.side, self.casts, self.mover = device, side, casts, mover
        self.consumer = torch.cuda.current_stream(device)
        self.staging = StagingPool(limit=depth + 1)
        self._plans: dict[tuple[Any, ...], Plan] = {}
        # The block handed over by `deliver` (with its event), and the size last needed.
        self._reserved: deque[tuple[torch.Tensor, torch.cuda.Event]] = deque(maxlen=1)
        self._block_bytes = 0

    def produce(self, batch: Any) -> Staged:
        leaves: list[torch.Tensor] = []
        objects: list[Any] = []
        map_structure(batch, leaves.append, objects.append)
        plan = self._plan(leaves)
        with torch.cuda.device(self.device):
            moved, keepalive, ready = self._move(leaves, plan)
        results = iter(moved)
        out = map_structure(batch, lambda _: next(results), lambda o: o)
        handled = None
        if objects or any(a is b for a, b in zip(moved, leaves, strict=True)):
            handled = frozenset(
                id(m) for m, leaf in zip(moved, leaves, strict=True) if m is not leaf
            )
        return Staged(out, ready, keepalive, handled)

    def deliver(self, staged: Staged, ahead: int) -> Any:
        torch.cuda.current_stream(self.device).wait_event(staged.ready)
        staged.keepalive.clear()  # safe now: the consumer's stream is ordered after the copies
        if ahead == 0:
            self._reserve()
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
        self._reserved.clear()  # never written by a copy: free to go

    def _plan(self, leaves: list[torch.Tensor]) -> Plan:
        kinds = [_kind(t) for t in leaves]
        key = tuple(
            None if k is None else (k, t.dtype, t.shape) for k, t in zip(kinds, leaves, strict=True)
        )
        plan = self._plans.get(key)
        if plan is None:
            if len(self._plans) >= _PLANS_KEPT:
                self._plans.clear()
            plan = self._plans[key] = make_plan(key, leaves, kinds, self.casts)
        return plan

    def _move(
        self, leaves: list[torch.Tensor], plan: Plan
    ) -> tuple[list[torch.Tensor], list[torch.Tensor], torch.cuda.Event]:
        staging = None
        if plan.staging_bytes:
            staging = self.staging.take(plan.staging_bytes)
            staging.fill(plan, [leaves[i] for i in plan.packed])
        moved = list(leaves)
        targets: list[torch.Tensor] = []
        block = None
        if plan.slots:
            block, allocated = self._take_block(plan.block_bytes)
            self.side.wait_event(allocated)
            targets = _pack.views(block, plan.slots)
        packed, rest = targets[: len(plan.packed)], targets[len(plan.packed) :]
        direct, cast = rest[: len(plan.direct)], rest[len(plan.direct) :]
        with torch.cuda.stream(self.side):
            if staging is not None and block is not None:
                block[: plan.staging_bytes].copy_(staging.region(), non_blocking=True)
            for i, target in zip(plan.packed, packed, strict=True):
                moved[i] = target
            for i, target in zip(plan.direct, direct, strict=True):
                moved[i] = target.copy_(leaves[i], non_blocking=True)
            # Casts run on the device, after the copy: the bus carries the smaller source type
            # for uint8 images, and the host thread does no arithmetic.
            _pack.copy_all(cast, [moved[i] for i in plan.cast])
            for i, target in zip(plan.cast, cast, strict=True):
                moved[i] = target
            ready = self.side.record_event()
        if staging is not None:
            staging.busy = ready
        return moved, [leaves[i] for i in plan.direct], ready

    def _take_block(self, nbytes: int) -> tuple[torch.Tensor, torch.cuda.Event]:
        self._block_bytes = nbytes
        try:
            block, allocated = self._reserved.popleft()
        except IndexError:
            return self._allocate(nbytes)
        if nbytes <= block.numel() <= 2 * nbytes:
            return block, allocated
        return self._allocate(nbytes)  # the reserved one was never written: dropping it is safe

    def _reserve(self) -> None:
        nbytes = self._block_bytes
        if nbytes and not self._reserved:
            self._reserved.append(self._allocate(nbytes))

    def _allocate(self, nbytes: int) -> tuple[torch.Tensor, torch.cuda.Event]:
        with torch.cuda.stream(self.consumer):
            block = torch.empty(nbytes, dtype=torch.uint8, device=self.device)
            return block, self.consumer.record_event()


def make_plan(
    key: tuple[Any, ...], leaves: list[torch.Tensor], kinds: list[str | None], casts: CastTable
) -> Plan:
    packed = tuple(i for i, k in enumerate(kinds) if k == _PACK)
    direct = tuple(i for i, k in enumerate(kinds) if k == _DIRECT)
    cast = tuple(i for i in packed + direct if leaves[i].dtype in casts)
    packed_slots, staging_bytes = _pack.layout([(leaves[i].dtype, leaves[i].shape) for i in packed])
    direct_slots, end = _pack.layout(
        [(leaves[i].dtype, leaves[i].shape) for i in direct], staging_bytes
    )
    cast_slots, block_bytes = _pack.layout(
        [(casts[leaves[i].dtype], leaves[i].shape) for i in cast], end
    )
    slots = (*packed_slots, *direct_slots, *cast_slots)
    return Plan(key, packed, direct, cast, slots, staging_bytes, block_bytes)


def _kind(tensor: torch.Tensor) -> str | None:
    """How the stage moves ``tensor``: packed, copied directly, or left to the consumer (None)."""
    if not _pack.can_pack(tensor):
        return None
    large = tensor.numel() * tensor.element_size() >= DIRECT_BYTES
    return _DIRECT if large and tensor.is_pinned() else _PACK


class Staging:
    """One pinned buffer, the event of its last copy, and its views for the last plan."""

    def __init__(self) -> None:
        self.buffer: torch.Tensor | None = None
        self.busy: torch.cuda.Event | None = None
        self._plan: Plan | None = None
        self._views: list[torch.Tensor] = []
        self._region: torch.Tensor | None = None

    def free(self) -> bool:
        return self.busy is None or bool(self.busy.query())  # type: ignore[no-untyped-call]

    def ensure(self, nbytes: int) -> None:
        if self.buffer is None or self.buffer.numel() < nbytes:
            # Grow geometrically so that a slowly growing batch does not re-pin every time.
            size = max(nbytes, 2 * (0 if self.buffer is None else self.buffer.numel()))
            self.buffer = pinned_bytes(_pack.aligned(size))
            self._plan = None

    def fill(self, plan: Plan, sources: list[torch.Tensor]) -> None:
        if self._plan is not plan:
            assert self.buffer is not None
            self._views = _pack.views(self.buffer, plan.slots[: len(plan.packed)])
            self._region = self.buffer[: plan.staging_bytes]
            self._plan = plan
        _pack.copy_all(self._views, sources)

    def region(self) -> torch.Tensor:
        """The bytes the last ``fill`` wrote."""
        assert self._region is not None
        return self._region


def pinned_bytes(nbytes: int) -> torch.Tensor:
    return torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)


class StagingPool:
    """Up to ``limit`` staging buffers; a buffer is refilled only once its copy has landed."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.buffers: deque[Staging] = deque()  # least recently used first

    def take(self, nbytes: int) -> Staging:
        staging = next((s for s in self.buffers if s.free()), None)
        if staging is None and len(self.buffers) < self.limit:
            staging = Staging()
        elif staging is None:
            staging = self.buffers[0]  # its copy was queued first, so it lands first
            assert staging.busy is not None
            staging.busy.synchronize()
        if staging in self.buffers:
            self.buffers.remove(staging)
        self.buffers.append(staging)
        staging.ensure(nbytes)
        return staging
