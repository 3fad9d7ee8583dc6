"""Pieces both benchmarks share: progress callbacks, device clocks, what could not be measured."""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

# progress(done, total, label): called before each measurement.
Progress = Callable[[int, int, str], None]


def no_progress(done: int, total: int, label: str) -> None:
    del done, total, label


def has_cuda() -> bool:
    return torch.cuda.is_available()


def sync(device: torch.device) -> None:
    """Wait until the device has finished its queued work, so a host clock measures it."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(device: torch.device, run: Callable[[], object]) -> float:
    """Seconds ``run`` takes, including the device work it queued."""
    sync(device)
    start = time.perf_counter()
    run()
    sync(device)
    return time.perf_counter() - start


NO_CUDA = (
    "no CUDA device here (torch.cuda.is_available() is False, torch {version}); "
    "host<->device figures need one"
)
