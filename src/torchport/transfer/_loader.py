"""``DeviceLoader``: wrap any DataLoader or iterable of batches; get batches on the device."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar

import torch

from torchport.transfer._device import DeviceLike, default_device
from torchport.transfer._prefetch import PrefetchIterator
from torchport.transfer._to_device import DtypeSpec, Mover, cast_table

B = TypeVar("B")


class DeviceLoader(Generic[B]):
    """Yields the batches of ``iterable`` with every tensor on ``device``, in the same order.

    One-line change from a DataLoader loop::

        for batch in DeviceLoader(loader):  # was: for batch in loader: batch = batch.to(dev)

    ``device`` defaults to :func:`default_device`; ``"cuda"`` without an index means the CUDA
    device that is current when each pass over the loader starts. ``dtype`` casts after the
    copy, on the device (a floating dtype casts floating tensors only; a mapping such as
    ``{torch.uint8: torch.float32}`` casts exactly the listed types; see :func:`cast_table`).

    On CUDA, a background thread stays up to ``prefetch`` batches ahead: it packs each batch into
    pinned memory and copies it on a side stream, and the consumer's stream waits on an event per
    batch (see ``_cuda.py``). Each batch is one device allocation; besides the batch the loop
    holds, at most ``prefetch + 1`` batches are on the device (queued, and one being copied), and
    at most ``prefetch + 1`` pinned staging buffers on the host. On other devices batches are
    moved as they are requested, which is nearly free on the CPU; ``background=True`` moves them
    on the thread there too.

    ``non_blocking`` is passed to :func:`to_device` wherever batches are moved by it; the CUDA
    staging path always copies asynchronously, from its own pinned buffers.

    ``len()``, ``set_epoch()`` and attributes such as ``sampler``, ``dataset`` and
    ``batch_size`` pass through to ``iterable``. An exception raised by ``iterable`` is re-raised
    in the loop with its traceback; leaving the loop early stops the thread and frees what it
    prefetched.
    """

    def __init__(
        self,
        iterable: Iterable[B],
        device: DeviceLike | None = None,
        *,
        prefetch: int = 2,
        dtype: DtypeSpec = None,
        non_blocking: bool | None = None,
        background: bool | None = None,
    ) -> None:
        if prefetch < 1:
            raise ValueError(f"prefetch must be at least 1, got {prefetch}")
        self.iterable = iterable
        # "cuda" without an index stays so: each pass uses the CUDA device that is current when
        # it starts, as x.to("cuda") would (a loader built before set_device(local_rank) too).
        self.device = default_device() if device is None else torch.device(device)
        self.prefetch = prefetch
        self.dtype = dtype
        self.non_blocking = non_blocking
        self._casts = cast_table(dtype)  # validates dtype now rather than at the first batch
        if background is None:
            # The CUDA stage needs real CUDA streams. A simulated "cuda" device (torchport run
            # --simulate cuda, on a CPU-only build or beside a real GPU) gets the plain path on
            # the caller's thread, where the run report can time the loader and count the copies
            # at the user's lines; background=True runs the CUDA stage on the simulated device
            # too (its tests do).
            background = self.device.type == "cuda" and _real_cuda_streams()
        self.background = background
        # One side stream per device for the loader's whole life: a new stream per epoch would
        # give the caching allocator a new pool each time and grow reserved memory (timm#2781).
        self._sides: dict[torch.device, torch.cuda.Stream] = {}

    def __iter__(self) -> Iterator[B]:
        device = _concrete(self.device)
        move = Mover(device, self.non_blocking, self.dtype)
        source = iter(self.iterable)
        if not self.background:
            return map(move, source)
        if device.type == "cuda":
            from torchport.transfer._cuda import CudaStage

            side = self._sides.get(device)
            if side is None:
                side = self._sides[device] = torch.cuda.Stream(device)  # type: ignore[no-untyped-call]
            stage = CudaStage(device, side, self._casts, move, self.prefetch)
            return PrefetchIterator(source, stage, self.prefetch)
        return PrefetchIterator(source, _HostStage(move), self.prefetch)

    def __len__(self) -> int:
        try:
            return len(self.iterable)  # type: ignore[arg-type]
        except TypeError:
            raise TypeError(
                f"DeviceLoader wraps a {type(self.iterable).__name__}, which has no len()"
            ) from None

    def set_epoch(self, epoch: int) -> None:
        """Forward to the first ``set_epoch`` found: the iterable's, or its (batch) sampler's."""
        batch_sampler = getattr(self.iterable, "batch_sampler", None)
        owners = (
            self.iterable,
            batch_sampler,
            getattr(batch_sampler, "sampler", None),
            getattr(self.iterable, "sampler", None),
        )
        for owner in owners:
            method = getattr(owner, "set_epoch", None)
            if callable(method):
                method(epoch)
                return
        raise AttributeError(
            f"set_epoch: the wrapped {type(self.iterable).__name__} has no set_epoch, "
            "and neither has its sampler"
        )

    def __getattr__(self, name: str) -> Any:
        # Only called for names DeviceLoader lacks: sampler, dataset, batch_size, ...
        if name.startswith("_") or "iterable" not in self.__dict__:
            raise AttributeError(name)
        return getattr(self.iterable, name)

    def __repr__(self) -> str:
        return (
            f"DeviceLoader({self.iterable!r}, device={str(self.device)!r}, "
            f"prefetch={self.prefetch}, dtype={self.dtype!r})"
        )


class _HostStage:
    """Moves batches on the prefetch thread; nothing to wait for when they arrive."""

    def __init__(self, move: Callable[[Any], Any]) -> None:
        self.move = move

    def produce(self, batch: Any) -> Any:
        return self.move(batch)

    def deliver(self, staged: Any, ahead: int) -> Any:
        return staged

    def abandon(self, staged: list[Any]) -> None:
        staged.clear()


def _real_cuda_streams() -> bool:
    """A CUDA (or ROCm) build whose streams are its own, not a simulation's stand-ins."""
    built = torch.version.cuda is not None or torch.version.hip is not None
    base = getattr(torch._C, "_CudaStreamBase", None)
    return built and base is not None and issubclass(torch.cuda.Stream, base)


def _concrete(device: torch.device) -> torch.device:
    # "cuda" means the current CUDA device; pin it down for the pass so that the prefetch
    # thread (whose current device is its own) and device comparisons agree.
    if device.type == "cuda" and device.index is None and torch.cuda.is_available():
        return torch.device("cuda", torch.cuda.current_device())
    return device
