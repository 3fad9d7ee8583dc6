"""Run a batch pipeline ahead of its consumer on one thread, with a bounded queue.

This is the part of DeviceLoader that owns ordering, memory bounds, errors and shutdown. It knows
nothing about devices: a ``Stage`` does the device work (``produce`` on the worker thread,
``deliver`` on the consumer's), so the same logic runs, and is tested, with a CPU stage.

    source ──next()──▶ worker: stage.produce ──queue(maxsize=depth)──▶ consumer: stage.deliver

At most ``depth`` produced batches wait in the queue and one more is being produced, so memory is
bounded by ``depth + 2`` batches counting the one the consumer holds.
"""

from __future__ import annotations

import queue
import threading
import weakref
from collections.abc import Iterator
from typing import Any, Generic, Protocol, TypeVar

B = TypeVar("B")


class Stage(Protocol):
    def produce(self, batch: Any) -> Any:
        """Worker thread: start moving ``batch``; returns what ``deliver`` needs."""

    def deliver(self, staged: Any, ahead: int) -> Any:
        """Consumer thread: make the staged batch safe to use here and return it.

        ``ahead`` is how many produced items already wait behind it: 0 means the worker is not
        ahead of the consumer (it is producing the next batch, or waiting for the source).
        """

    def abandon(self, staged: list[Any]) -> None:
        """Consumer side, worker stopped: release batches that will never be delivered."""


class _End:
    """Put by the worker after the source's last batch."""


class _Failure:
    """Put by the worker when the source or the stage raised."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


def _work(
    source: Iterator[Any], stage: Stage, out: queue.Queue[Any], stop: threading.Event
) -> None:
    item: Any
    try:
        while not stop.is_set():
            try:
                batch = next(source)
            except StopIteration:
                item = _End()
            else:
                item = stage.produce(batch)
                del batch
            if stop.is_set():
                # Not delivered: let the stage make freeing it safe before this frame drops it.
                stage.abandon([] if isinstance(item, _End) else [item])
                return
            out.put(item)  # blocks while `depth` batches wait: this is the memory bound
            if isinstance(item, _End):
                return
            del item
    except BaseException as error:  # noqa: BLE001 - everything is handed to the consumer
        if not stop.is_set():
            out.put(_Failure(error))


def _shutdown(
    thread: threading.Thread, out: queue.Queue[Any], stop: threading.Event, stage: Stage
) -> None:
    stop.set()
    leftovers = _drain(out)  # unblocks a worker stuck in put(); it then sees `stop` and returns
    if thread.ident != threading.get_ident():
        thread.join()
    leftovers += _drain(out)
    stage.abandon([x for x in leftovers if not isinstance(x, (_End, _Failure))])


def _drain(out: queue.Queue[Any]) -> list[Any]:
    items = []
    while True:
        try:
            items.append(out.get_nowait())
        except queue.Empty:
            return items


class PrefetchIterator(Generic[B]):
    """Yields ``stage.deliver(stage.produce(batch))`` for each batch of ``source``, in order.

    An exception from the source or the stage is re-raised here, with its original traceback.
    The worker thread stops and is joined when the source ends, when it fails, on ``close()``,
    and when this iterator is garbage collected (breaking out of a ``for`` loop does that).
    """

    def __init__(self, source: Iterator[Any], stage: Stage, depth: int) -> None:
        if depth < 1:
            raise ValueError(f"prefetch depth must be at least 1, got {depth}")
        self._stage = stage
        self.source = source  # what the worker reads (a DataLoader iterator, say); read-only
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=depth)
        stop = threading.Event()
        # The thread must not reference `self`, or the iterator could never be collected.
        thread = threading.Thread(
            target=_work,
            args=(source, stage, self._queue, stop),
            name="torchport-prefetch",
            daemon=True,
        )
        self._finalizer = weakref.finalize(self, _shutdown, thread, self._queue, stop, stage)
        thread.start()

    def __iter__(self) -> PrefetchIterator[B]:
        return self

    def __next__(self) -> B:
        if not self._finalizer.alive:
            raise StopIteration
        item = self._queue.get()
        if isinstance(item, _End):
            self.close()
            raise StopIteration
        if isinstance(item, _Failure):
            self.close()
            error = item.error
            if hasattr(error, "add_note"):
                error.add_note("(raised while DeviceLoader prefetched this batch)")
            raise error
        result: B = self._stage.deliver(item, self._queue.qsize())
        return result

    def close(self) -> None:
        """Stop the worker and release what it prefetched; safe to call more than once."""
        self._finalizer()
