"""Timing one training loop in its steady state, on the device's own clock.

A pass runs ``warmup`` steps, then times ``steps`` more between two marks, and stops before the
source ends: the prefetch queue is as full at both marks, so neither its head start nor its
drain is counted. On CUDA the marks are events on the loop's stream, so the window is read off
the GPU's timeline (no host synchronisation inside it), and an event pair around each step gives
the time the GPU spent on the steps themselves: the rest of the window it sat idle, waiting for
data. Without CUDA the marks are host clocks and idle time is not measured.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable
from typing import Any

import torch

from torchport.bench._common import sync

WARMUP = 10


@dataclasses.dataclass(frozen=True)
class Pass:
    steps_per_s: float
    idle_share: float | None  # share of the window the device did not spend on steps
    extra_mib: float | None  # peak device memory allocated above the loop's start


class Clock:
    """Marks on the device's timeline (CUDA events on the current stream) or the host's."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.cuda = device.type == "cuda"

    def mark(self) -> Any:
        if not self.cuda:
            return time.perf_counter()
        event = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
        event.record()
        return event

    def seconds(self, start: Any, end: Any) -> float:
        if not self.cuda:
            return float(end - start)
        return float(start.elapsed_time(end)) / 1e3  # both have been synchronised by then


def timed_pass(
    clock: Clock,
    batches: Iterable[Any],
    step: Callable[[Any], None],
    steps: int,
    warmup: int = WARMUP,
) -> Pass:
    """One pass over ``batches`` (which must hold at least ``warmup + steps`` batches)."""
    cuda = clock.cuda
    if cuda:
        sync(clock.device)
        base = torch.cuda.memory_allocated(clock.device)
        torch.cuda.reset_peak_memory_stats(clock.device)
    iterator = iter(batches)
    for _ in range(warmup):
        step(next(iterator))
    spans = []
    first = clock.mark()
    for _ in range(steps):
        batch = next(iterator)
        start = clock.mark()  # on CUDA: after the stream's wait for this batch
        step(batch)
        spans.append((start, clock.mark()))
    last = clock.mark()
    close = getattr(iterator, "close", None)
    if callable(close):
        close()  # a DeviceLoader's thread stops here, outside the window
    sync(clock.device)
    window = clock.seconds(first, last)
    if not cuda:
        return Pass(steps / window, None, None)
    busy = sum(clock.seconds(start, end) for start, end in spans)
    extra = (torch.cuda.max_memory_allocated(clock.device) - base) / (1 << 20)
    return Pass(steps / window, max(0.0, 1 - busy / window), extra)


def best_pass(
    clock: Clock, batches: Callable[[], Iterable[Any]], step: Callable[[Any], None],
    steps: int, repeats: int,
) -> Pass:  # fmt: skip
    """The fastest of ``repeats`` passes (other processes share the machine)."""
    return max((timed_pass(clock, batches(), step, steps) for _ in range(repeats)),
               key=lambda p: p.steps_per_s)  # fmt: skip


@dataclasses.dataclass(frozen=True)
class StepCost:
    """Seconds per step of the synthetic model: ``fixed + iters * per_iter`` (fitted)."""

    fixed: float
    per_iter: float

    def iters_for(self, seconds: float) -> int:
        return max(1, round((seconds - self.fixed) / self.per_iter))

    def seconds(self, iters: int) -> float:
        return self.fixed + iters * self.per_iter


def fit_step_cost(period: Callable[[int], float], low: int = 1, high: int = 21) -> StepCost:
    """The step's cost line through its measured periods at ``low`` and ``high`` iterations.

    A step is not only its matrix products: launching them, the loop and the batch's first read
    cost a fixed amount per step, which dominates a light step. Sizing the model from the
    products alone made the copy-light regime much heavier than it said.
    """
    at_low, at_high = period(low), period(high)
    per_iter = max((at_high - at_low) / (high - low), 1e-9)
    return StepCost(max(0.0, at_low - low * per_iter), per_iter)
