from __future__ import annotations

import gc
import threading
import time
import traceback
from collections.abc import Iterator

import pytest
import torch
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

from torchport.transfer import DeviceLoader
from torchport.transfer._prefetch import PrefetchIterator

BACKENDS = pytest.mark.parametrize("background", [False, True], ids=["inline", "thread"])


def _prefetch_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "torchport-prefetch"]


def _batches(n: int) -> list[dict[str, torch.Tensor]]:
    return [
        {"i": torch.tensor([i]), "x": torch.full((2,), float(i), dtype=torch.float64)}
        for i in range(n)
    ]


@BACKENDS
def test_every_batch_arrives_once_in_order_and_cast(background: bool) -> None:
    loader = DeviceLoader(_batches(20), "cpu", dtype=torch.float32, background=background)
    out = list(loader)
    assert [int(b["i"]) for b in out] == list(range(20))
    assert all(b["x"].dtype == torch.float32 and b["i"].dtype == torch.int64 for b in out)


@BACKENDS
def test_iterating_twice_gives_two_full_epochs(background: bool) -> None:
    loader = DeviceLoader(range(5), "cpu", background=background)
    assert list(loader) == list(loader) == list(range(5))


def failing_source(fail_at: int) -> Iterator[int]:
    for i in range(10):
        if i == fail_at:
            raise ValueError(f"bad sample {i}")
        yield i


@BACKENDS
def test_source_error_reaches_the_loop_with_its_traceback(background: bool) -> None:
    received = []
    with pytest.raises(ValueError, match="bad sample 3") as info:
        for i in DeviceLoader(failing_source(3), "cpu", background=background):
            received.append(i)
    assert received == [0, 1, 2]
    frames = [frame.name for frame in traceback.extract_tb(info.value.__traceback__)]
    assert "failing_source" in frames
    assert not _prefetch_threads()


def test_early_break_stops_the_prefetch_thread() -> None:
    before = threading.active_count()
    for i in DeviceLoader(range(1000), "cpu", prefetch=3, background=True):
        if i == 2:
            break
    assert not _prefetch_threads()
    assert threading.active_count() == before


def test_abandoned_iterator_is_cleaned_up_by_gc() -> None:
    iterator = iter(DeviceLoader(range(1000), "cpu", background=True))
    next(iterator)
    assert _prefetch_threads()
    del iterator
    gc.collect()
    assert not _prefetch_threads()


@pytest.mark.parametrize("depth", [1, 3])
def test_prefetch_depth_bounds_batches_in_memory(depth: int) -> None:
    pulled = 0

    def counting() -> Iterator[int]:
        nonlocal pulled
        for i in range(30):
            pulled += 1
            yield i

    worst = 0
    for consumed, _ in enumerate(DeviceLoader(counting(), "cpu", prefetch=depth, background=True)):
        time.sleep(0.002)  # let the worker run as far ahead as it may
        worst = max(worst, pulled - (consumed + 1))
    # queued batches + the one the worker holds while it waits to enqueue it
    assert 1 <= worst <= depth + 1


class _ExplodingStage:
    def produce(self, batch: int) -> int:
        if batch == 2:
            raise RuntimeError("stage failed")
        return batch

    def deliver(self, staged: int, ahead: int) -> int:
        return staged

    def abandon(self, staged: list[int]) -> None:
        staged.clear()


def test_stage_error_is_raised_after_the_batches_before_it() -> None:
    iterator: PrefetchIterator[int] = PrefetchIterator(iter(range(5)), _ExplodingStage(), 2)
    assert [next(iterator), next(iterator)] == [0, 1]
    with pytest.raises(RuntimeError, match="stage failed"):
        next(iterator)
    with pytest.raises(StopIteration):
        next(iterator)


def test_len_sampler_dataset_and_set_epoch_pass_through() -> None:
    dataset = TensorDataset(torch.arange(16))
    sampler = DistributedSampler(dataset, num_replicas=2, rank=0, shuffle=True, seed=1)
    loader = DataLoader(dataset, batch_size=2, sampler=sampler)
    wrapped = DeviceLoader(loader, "cpu")
    assert len(wrapped) == len(loader) == 4
    assert wrapped.sampler is sampler and wrapped.dataset is dataset
    wrapped.set_epoch(5)
    assert sampler.epoch == 5


def test_len_of_an_unsized_source_is_a_clear_type_error() -> None:
    with pytest.raises(TypeError, match="generator, which has no len"):
        len(DeviceLoader((i for i in range(3)), "cpu"))


def test_set_epoch_without_any_owner_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no set_epoch"):
        DeviceLoader([1, 2], "cpu").set_epoch(1)


def test_prefetch_below_one_is_rejected() -> None:
    with pytest.raises(ValueError, match="prefetch must be at least 1"):
        DeviceLoader([], "cpu", prefetch=0)


def test_worker_processes_and_persistent_workers_deliver_each_batch_once() -> None:
    dataset = TensorDataset(torch.arange(24))
    loader = DataLoader(dataset, batch_size=4, num_workers=2, persistent_workers=True)
    wrapped = DeviceLoader(loader, "cpu", background=True)
    for _ in range(2):
        seen = [int(x) for (batch,) in wrapped for x in batch]
        assert seen == list(range(24))
    assert not _prefetch_threads()


class _LedgerStage:
    """Records what was produced, delivered and abandoned."""

    def __init__(self) -> None:
        self.produced: list[int] = []
        self.delivered: list[int] = []
        self.abandoned: list[int] = []

    def produce(self, batch: int) -> int:
        self.produced.append(batch)
        return batch

    def deliver(self, staged: int, ahead: int) -> int:
        self.delivered.append(staged)
        return staged

    def abandon(self, staged: list[int]) -> None:
        self.abandoned.extend(staged)
        staged.clear()


@pytest.mark.parametrize("depth", [1, 2, 4])
def test_early_close_hands_every_undelivered_batch_to_the_stage(depth: int) -> None:
    stage = _LedgerStage()
    iterator: PrefetchIterator[int] = PrefetchIterator(iter(range(100)), stage, depth)
    for _ in range(3):
        next(iterator)
    time.sleep(0.01)  # let the worker fill the queue
    iterator.close()
    assert stage.delivered == [0, 1, 2]
    assert sorted(stage.delivered + stage.abandoned) == stage.produced
    assert len(stage.abandoned) >= 1


def test_batch_being_produced_at_close_is_abandoned_by_the_stage() -> None:
    reached, gate = threading.Event(), threading.Event()

    class SlowStage(_LedgerStage):
        def produce(self, batch: int) -> int:
            if batch == 3:
                reached.set()
                gate.wait(timeout=10)
            return super().produce(batch)

    stage = SlowStage()
    iterator: PrefetchIterator[int] = PrefetchIterator(iter(range(100)), stage, 1)
    assert [next(iterator) for _ in range(3)] == [0, 1, 2]
    assert reached.wait(timeout=10)
    opener = threading.Timer(0.05, gate.set)
    opener.start()
    iterator.close()  # joins the worker, which finishes batch 3 after the gate opens
    opener.join()
    assert stage.abandoned == [3]


def test_deliver_is_told_whether_the_worker_is_ahead() -> None:
    reached, gate = threading.Event(), threading.Event()

    def source() -> Iterator[int]:
        yield 0
        yield 1
        reached.set()  # both batches are queued: the worker asks for the next one
        gate.wait(timeout=10)
        yield 2

    aheads: list[int] = []

    class Recording(_LedgerStage):
        def deliver(self, staged: int, ahead: int) -> int:
            aheads.append(ahead)
            return super().deliver(staged, ahead)

    iterator: PrefetchIterator[int] = PrefetchIterator(source(), Recording(), 4)
    assert reached.wait(timeout=10)
    assert [next(iterator), next(iterator)] == [0, 1]
    assert aheads == [1, 0]  # batch 1 waited behind batch 0; then the worker was blocked
    gate.set()
    assert list(iterator) == [2]
