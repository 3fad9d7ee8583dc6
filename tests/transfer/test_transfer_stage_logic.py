"""The CUDA stage's bookkeeping (plan, pack, cast, block, staging, hand-off), run on the CPU.

Streams and events are replaced by recorders and pinned buffers by plain ones, so these tests pin
which leaves are packed, cast or left to the consumer, how many allocations a batch costs, which
events are waited for and in which order stream operations are issued; the real stream
semantics are covered by the cuda-marked tests.
"""

from __future__ import annotations

import contextlib
from collections import namedtuple
from collections.abc import Iterator
from typing import Any

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from torchport.transfer import _cuda, _pack
from torchport.transfer._to_device import Mover, cast_table

Pair = namedtuple("Pair", ["a", "b"])
CASTS = {torch.float64: torch.float32, torch.uint8: torch.float32}


class FakeEvent:
    def __init__(self, log: list[str], name: str) -> None:
        self.log, self.name, self.done = log, name, True

    def synchronize(self) -> None:
        self.log.append(f"sync {self.name}")

    def query(self) -> bool:
        return self.done


class FakeStream:
    def __init__(self, log: list[str], name: str) -> None:
        self.log, self.name, self.events = log, name, 0

    def record_event(self) -> FakeEvent:
        self.events += 1
        event = FakeEvent(self.log, f"{self.name}{self.events}")
        self.log.append(f"{self.name} records {event.name}")
        return event

    def wait_event(self, event: FakeEvent) -> None:
        self.log.append(f"{self.name} waits {event.name}")

    def wait_stream(self, other: FakeStream) -> None:
        self.log.append(f"{self.name} waits stream {other.name}")


class Setup:
    def __init__(self, monkeypatch: pytest.MonkeyPatch, depth: int = 2) -> None:
        self.log: list[str] = []
        self.consumer = FakeStream(self.log, "consumer")
        self.side = FakeStream(self.log, "side")

        @contextlib.contextmanager
        def no_context(_: Any) -> Iterator[None]:
            yield

        monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: self.consumer)
        monkeypatch.setattr(torch.cuda, "device", no_context)
        monkeypatch.setattr(torch.cuda, "stream", no_context)
        monkeypatch.setattr(torch.Tensor, "is_pinned", lambda self: self.numel() >= 1 << 18)
        monkeypatch.setattr(_cuda, "pinned_bytes", lambda n: torch.zeros(n, dtype=torch.uint8))
        self.allocations: list[int] = []
        allocate = _cuda.CudaStage._allocate

        def counted(stage: _cuda.CudaStage, nbytes: int) -> Any:
            self.allocations.append(nbytes)
            return allocate(stage, nbytes)

        monkeypatch.setattr(_cuda.CudaStage, "_allocate", counted)
        mover = Mover("cpu", None, CASTS)
        self.stage = _cuda.CudaStage(
            torch.device("cpu"), self.side, cast_table(CASTS), mover, depth
        )  # type: ignore[arg-type]


@pytest.fixture
def setup(monkeypatch: pytest.MonkeyPatch) -> Setup:
    return Setup(monkeypatch)


def _batch() -> dict[str, Any]:
    return {
        "small": [torch.arange(5, dtype=torch.float64) + i for i in range(3)],
        "big": torch.ones(1 << 18),  # "pinned" (see Setup) and >= 1 MiB: copied directly
        "image": torch.tensor([[0, 255]], dtype=torch.uint8).t(),
        "pair": Pair(torch.tensor([1, 2]), "text"),
        "grad": torch.ones(2, requires_grad=True),
    }


def test_stage_output_matches_to_device_reference(setup: Setup) -> None:
    stage = setup.stage
    for _ in range(2):  # the second batch reuses the first one's plan and staging views
        batch = _batch()
        out = stage.deliver(stage.produce(batch), 0)
        expected = Mover("cpu", None, CASTS)(batch)
        assert type(out["pair"]) is Pair and out["pair"].b == "text"
        pairs = [(out["big"], expected["big"]), (out["image"], expected["image"]),
                 (out["pair"].a, expected["pair"].a), (out["grad"], expected["grad"])]  # fmt: skip
        pairs += list(zip(out["small"], expected["small"], strict=True))
        for got, want in pairs:
            assert got.dtype == want.dtype and torch.equal(got.detach(), want.detach())


def test_every_moved_leaf_lives_in_one_device_block(setup: Setup) -> None:
    batch = {"a": torch.arange(3), "b": torch.arange(4.0), "big": torch.ones(1 << 18)}
    out = setup.stage.deliver(setup.stage.produce(batch), 1)

    def storage(t: torch.Tensor) -> int:
        return t.untyped_storage().data_ptr()

    assert storage(out["a"]) == storage(out["b"]) == storage(out["big"])
    assert storage(out["big"]) != storage(batch["big"])
    assert all(torch.equal(out[k], batch[k]) for k in batch)
    # aligned within the block (the CUDA allocator aligns the block itself to 512 bytes)
    assert all((t.data_ptr() - storage(t)) % _pack.ALIGN == 0 for t in out.values())


def test_each_batch_costs_one_device_allocation_whatever_it_holds(setup: Setup) -> None:
    stage = setup.stage
    for _ in range(5):
        stage.deliver(stage.produce(_batch()), 0)  # packed, direct and cast leaves alike
    # one per batch, plus the block reserved for a sixth batch when the fifth was handed out
    assert len(setup.allocations) == 6
    leftover: list[Any] = []
    stage.abandon(leftover)
    assert not stage._reserved


def test_copy_waits_only_for_work_queued_before_the_previous_batch_was_handed_out(
    setup: Setup,
) -> None:
    stage, log = setup.stage, setup.log
    stage.deliver(stage.produce(_batch()), 0)
    log.append("training step 1 queued")
    stage.deliver(stage.produce(_batch()), 0)
    assert log == [
        "consumer records consumer1",  # batch 1's block is allocated
        "side waits consumer1",
        "side records side1",  # every copy and cast of batch 1 is done
        "consumer waits side1",
        "consumer records consumer2",  # batch 2's block, reserved before step 1 is queued
        "training step 1 queued",
        "side waits consumer2",  # so the copy of batch 2 can overlap step 1
        "side records side2",
        "consumer waits side2",
        "consumer records consumer3",
    ]


def test_no_block_is_reserved_while_the_worker_is_ahead(setup: Setup) -> None:
    stage = setup.stage
    stage.deliver(stage.produce(_batch()), 2)
    stage.produce(_batch())
    assert len(setup.allocations) == 2 and not stage._reserved


def test_a_reserved_block_of_the_wrong_size_is_not_used(setup: Setup) -> None:
    stage = setup.stage
    stage.deliver(stage.produce({"x": torch.ones(8)}), 0)
    big = stage.produce({"x": torch.ones(4096)})
    assert setup.allocations == [256, 256, 16384]
    assert big.batch["x"].numel() == 4096


def test_a_batch_with_nothing_to_move_is_handed_over_as_it_is(setup: Setup) -> None:
    stage = setup.stage
    grad = torch.ones(2, requires_grad=True)
    out = stage.deliver(stage.produce({"grad": grad, "name": "x"}), 0)
    assert torch.equal(out["grad"], grad) and out["name"] == "x"
    assert setup.allocations == []


def test_batches_of_one_structure_reuse_the_plan_and_the_staging_views(
    setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[int] = []
    views = _pack.views

    def counted(buffer: torch.Tensor, slots: Any) -> list[torch.Tensor]:
        made.append(len(slots))
        return views(buffer, slots)

    monkeypatch.setattr(_pack, "views", counted)
    stage = setup.stage
    for _ in range(4):
        stage.deliver(stage.produce(_batch()), 1)
    # The staging buffer (reused: every copy has landed) gets its 5 views once; every batch gets
    # the views of its own device block: 5 packed + 1 direct + 4 cast targets.
    assert made.count(10) == 4 and made.count(5) == 1
    assert len(stage._plans) == 1


def _busy(log: list[str], name: str) -> FakeEvent:
    event = FakeEvent(log, name)
    event.done = False
    return event


def test_a_staging_buffer_is_reused_once_its_copy_has_landed_without_a_wait(
    setup: Setup,
) -> None:
    pool = _cuda.StagingPool(limit=3)
    first = pool.take(64)
    first.busy = FakeEvent(setup.log, "copied")  # its copy has landed
    assert pool.take(64) is first
    assert setup.log == []


def test_a_new_staging_buffer_is_added_only_while_every_other_one_is_in_flight(
    setup: Setup,
) -> None:
    pool = _cuda.StagingPool(limit=3)
    taken = []
    for i in range(3):
        staging = pool.take(64)
        staging.busy = _busy(setup.log, f"copy{i}")
        taken.append(staging)
    assert len({id(s) for s in taken}) == 3 and setup.log == []
    assert pool.take(64) is taken[0]  # the limit: wait for the copy queued first
    assert setup.log == ["sync copy0"]


def test_a_staging_buffer_grows_to_fit_a_larger_batch(setup: Setup) -> None:
    pool = _cuda.StagingPool(limit=1)
    staging = pool.take(300)
    assert staging.buffer is not None and staging.buffer.numel() == 512
    staging = pool.take(2000)
    assert staging.buffer is not None and staging.buffer.numel() == 2048


def test_abandoned_batches_order_the_consumer_after_the_side_stream(setup: Setup) -> None:
    stage, log = setup.stage, setup.log
    leftovers = [stage.produce(_batch())]
    stage.abandon(leftovers)
    assert log[-1] == "consumer waits stream side" and leftovers == []


class _CountOps(TorchDispatchMode):
    """Counts the ATen calls made: on CUDA each one drops and retakes the GIL, which the
    prefetch thread shares with the training loop launching its kernels."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        self.calls += 1
        return func(*args, **(kwargs or {}))


def test_a_batch_costs_one_torch_call_per_leaf_plus_a_few(setup: Setup) -> None:
    stage = setup.stage

    def calls(leaves: int) -> int:
        batch = {f"x{i}": torch.randn(64) for i in range(leaves)}
        stage.deliver(stage.produce(batch), 0)  # the plan and the staging views are made once
        with _CountOps() as counter:
            stage.deliver(stage.produce(batch), 0)
        return counter.calls

    few, many = calls(16), calls(64)
    assert many - few <= 48  # each extra leaf: its view into the device block, nothing more
    assert few <= 16 + 10
