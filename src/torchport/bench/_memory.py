"""Device memory figures of ``bench loader``: per prefetch slot, and drift over a long run."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable
from typing import Any

import torch

from torchport.bench._common import sync


def per_slot_mib(rows: list[dict[str, Any]], depths: tuple[int, ...]) -> float | None:
    """Extra device memory one more prefetch slot costs: the steepest least-squares slope of
    DeviceLoader's extra memory over its depths, across regimes (None with a single depth)."""
    if len(set(depths)) < 2:
        return None
    slopes = []
    for regime in dict.fromkeys(row["regime"] for row in rows):
        points = [(d, row["extra_mib"]) for d in depths for row in rows
                  if row["regime"] == regime and row["mode"] == f"DeviceLoader prefetch={d}"
                  and row["extra_mib"] is not None]  # fmt: skip
        if len(points) >= 2:
            slopes.append(_slope(points))
    return max(slopes) if slopes else None


def _slope(points: list[tuple[int, float]]) -> float:
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / spread


@dataclasses.dataclass(frozen=True)
class Drift:
    reserved_mib: float
    allocated_mib: float
    steps: int


def reserved_drift(
    device: torch.device, loader: Iterable[Any], step: Callable[[Any], None], steps: int
) -> Drift:
    """Reserved and allocated memory after ``steps`` more steps, in whole epochs over
    ``loader``, minus what they were after a first epoch (which fills the caching allocator)."""
    for batch in loader:
        step(batch)
    sync(device)
    reserved, allocated = torch.cuda.memory_reserved(device), torch.cuda.memory_allocated(device)
    per_epoch = max(1, len(loader))  # type: ignore[arg-type]
    epochs = max(1, math.ceil(steps / per_epoch))
    for _ in range(epochs):
        for batch in loader:
            step(batch)
    sync(device)
    return Drift(
        (torch.cuda.memory_reserved(device) - reserved) / (1 << 20),
        (torch.cuda.memory_allocated(device) - allocated) / (1 << 20),
        epochs * per_epoch,
    )
