"""The CUDA stage's bookkeeping (split, pack, cast, hand-off), run on the CPU with fake streams.

Streams and events are replaced by recorders and the pinned buffer by a plain one, so these tests
pin which leaves are packed, cast or left to the consumer, and the order of stream operations;
the real stream semantics are covered by the cuda-marked tests.
"""

from __future__ import annotations

import contextlib
from collections import namedtuple
from collections.abc import Iterator
from typing import Any

import pytest
import torch

from torchport.transfer import _cuda
from torchport.transfer._to_device import Mover, cast_table

Pair = namedtuple("Pair", ["a", "b"])


class FakeEvent:
    def __init__(self, log: list[str], name: str) -> None:
        self.log, self.name = log, name

    def synchronize(self) -> None:
        self.log.append(f"sync {self.name}")


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


@pytest.fixture
def stage(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[_cuda.CudaStage, list[str]]]:
    log: list[str] = []
    consumer, side = FakeStream(log, "consumer"), FakeStream(log, "side")

    @contextlib.contextmanager
    def no_context(_: Any) -> Iterator[None]:
        yield

    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: consumer)
    monkeypatch.setattr(torch.cuda, "device", no_context)
    monkeypatch.setattr(torch.cuda, "stream", no_context)
    monkeypatch.setattr(torch.Tensor, "is_pinned", lambda self: self.numel() >= 1 << 18)
    casts = cast_table({torch.float64: torch.float32, torch.uint8: torch.float32})
    mover = Mover("cpu", None, {torch.float64: torch.float32, torch.uint8: torch.float32})
    cpu_stage = _cuda.CudaStage(torch.device("cpu"), side, casts, mover)  # type: ignore[arg-type]
    monkeypatch.setattr(cpu_stage, "_next_staging", lambda n: torch.zeros(n, dtype=torch.uint8))
    yield cpu_stage, log


def _batch() -> dict[str, Any]:
    return {
        "small": [torch.arange(5, dtype=torch.float64) + i for i in range(3)],
        "big": torch.ones(1 << 18),  # "pinned" (see the fixture) and >= 1 MiB: copied directly
        "image": torch.tensor([[0, 255]], dtype=torch.uint8).t(),
        "pair": Pair(torch.tensor([1, 2]), "text"),
        "grad": torch.ones(2, requires_grad=True),
    }


def test_stage_output_matches_to_device_reference(stage: tuple[_cuda.CudaStage, Any]) -> None:
    cpu_stage, _ = stage
    batch = _batch()
    out = cpu_stage.deliver(cpu_stage.produce(batch))
    expected = Mover("cpu", None, {torch.float64: torch.float32, torch.uint8: torch.float32})(batch)
    assert type(out["pair"]) is Pair and out["pair"].b == "text"
    pairs = [(out["big"], expected["big"]), (out["image"], expected["image"]),
             (out["pair"].a, expected["pair"].a), (out["grad"], expected["grad"])]  # fmt: skip
    pairs += list(zip(out["small"], expected["small"], strict=True))
    for got, want in pairs:
        assert got.dtype == want.dtype and torch.equal(got.detach(), want.detach())


def test_small_leaves_share_one_buffer_and_big_pinned_ones_do_not(
    stage: tuple[_cuda.CudaStage, Any],
) -> None:
    cpu_stage, _ = stage
    batch = {"a": torch.arange(3), "b": torch.arange(4), "big": torch.ones(1 << 18)}
    out = cpu_stage.deliver(cpu_stage.produce(batch))

    def storage(t: torch.Tensor) -> int:
        return t.untyped_storage().data_ptr()

    assert storage(out["a"]) == storage(out["b"])
    assert storage(out["big"]) not in (storage(out["a"]), storage(batch["big"]))
    assert torch.equal(out["a"], batch["a"]) and torch.equal(out["b"], batch["b"])


def test_copies_wait_for_the_allocation_and_the_consumer_waits_for_the_copies(
    stage: tuple[_cuda.CudaStage, Any],
) -> None:
    cpu_stage, log = stage
    staged = cpu_stage.produce(_batch())
    cpu_stage.deliver(staged)
    assert log == [
        "consumer records consumer1",
        "side waits consumer1",
        "side records side1",  # the staging buffer's copy has landed
        "side records side2",  # every copy and cast of the batch is done
        "consumer waits side2",
    ]


def test_abandoned_batches_order_the_consumer_after_the_side_stream(
    stage: tuple[_cuda.CudaStage, Any],
) -> None:
    cpu_stage, log = stage
    leftovers = [cpu_stage.produce(_batch())]
    cpu_stage.abandon(leftovers)
    assert log[-1] == "consumer waits stream side" and leftovers == []
