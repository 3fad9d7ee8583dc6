"""``torchport bench transfer``: copy bandwidth across sizes, against the measured ceiling.

On CUDA: host->device and device->host, from pageable and pinned host memory, blocking and
``non_blocking`` (timed from issue to completion, which is what a training loop waits for).
The ceiling of a direction is the best pinned figure measured in that direction; every row says
which share of it it reaches. Without CUDA there is no device and no pinned memory (pinning needs
CUDA), so only host memory-copy bandwidth is measured, and the report says what was skipped.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

import torch

from torchport.bench._common import NO_CUDA, Progress, has_cuda, no_progress, timed

_UNITS = {"": 1, "b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "k": 1 << 10,
          "m": 1 << 20, "g": 1 << 30}  # fmt: skip
DEFAULT_SIZES = (4 << 10, 64 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20)


def parse_size(text: str) -> int:
    """``"64KiB"`` -> 65536; binary units (KiB, MiB, GiB, or K, M, G)."""
    match = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", text)
    unit = match.group(2).lower() if match else None
    if match is None or unit not in _UNITS:
        raise ValueError(f"not a size: {text!r} (use e.g. 4KiB, 64MiB, 1GiB)")
    return int(match.group(1)) * _UNITS[unit]


def measure_transfer(
    sizes: tuple[int, ...] = DEFAULT_SIZES,
    *,
    budget_bytes: int = 1 << 30,
    progress: Progress = no_progress,
) -> dict[str, Any]:
    """Bandwidth rows plus the ceiling per direction; ``budget_bytes`` caps bytes per row."""
    if has_cuda():
        rows, skipped = _cuda_rows(sizes, budget_bytes, progress), []
    else:
        rows = _host_rows(sizes, budget_bytes, progress)
        skipped = [NO_CUDA.format(version=torch.__version__), "pinned memory: needs CUDA"]
    ceilings: dict[str, float] = {}
    for row in rows:
        if row["memory"] != "pageable" or row["direction"] == "host->host":
            best = ceilings.get(row["direction"], 0.0)
            ceilings[row["direction"]] = max(best, row["gb_per_s"])
    for row in rows:
        row["share_of_ceiling"] = row["gb_per_s"] / ceilings[row["direction"]]
    device = torch.cuda.get_device_name() if has_cuda() else "cpu"
    return {"device": device, "ceiling_gb_per_s": ceilings, "rows": rows, "skipped": skipped}


def _repeats(size: int, budget_bytes: int) -> int:
    return max(3, min(200, budget_bytes // max(size, 1)))


def _row(case: tuple[str, str, str], size: int, seconds: float, n: int) -> dict[str, Any]:
    direction, memory, mode = case
    return {"direction": direction, "memory": memory, "mode": mode, "bytes": size,
            "gb_per_s": size * n / seconds / 1e9}  # fmt: skip


def _cuda_rows(sizes: tuple[int, ...], budget: int, progress: Progress) -> list[dict[str, Any]]:
    device = torch.device("cuda", torch.cuda.current_device())
    cases = list(itertools.product(("host->device", "device->host"), ("pageable", "pinned"),
                                   ("blocking", "non_blocking"), sizes))  # fmt: skip
    rows = []
    for done, (direction, memory, mode, size) in enumerate(cases):
        progress(done, len(cases), f"{direction} {memory} {mode} {size} B")
        host = torch.empty(size, dtype=torch.uint8, pin_memory=memory == "pinned")
        on_device = torch.empty(size, dtype=torch.uint8, device=device)
        src, dst = (host, on_device) if direction == "host->device" else (on_device, host)
        nb, n = mode == "non_blocking", _repeats(size, budget)
        dst.copy_(src, non_blocking=nb)  # warm-up: first-touch and allocator effects

        def copies(src: torch.Tensor = src, dst: torch.Tensor = dst, nb: bool = nb,
                   n: int = n) -> None:  # fmt: skip
            for _ in range(n):
                dst.copy_(src, non_blocking=nb)

        rows.append(_row((direction, memory, mode), size, timed(device, copies), n))
    progress(len(cases), len(cases), "done")
    return rows


def _host_rows(sizes: tuple[int, ...], budget: int, progress: Progress) -> list[dict[str, Any]]:
    cpu = torch.device("cpu")
    rows = []
    for done, size in enumerate(sizes):
        progress(done, len(sizes), f"host->host {size} B")
        src = torch.ones(size, dtype=torch.uint8)
        dst = torch.empty_like(src)
        n = _repeats(size, budget)
        dst.copy_(src)

        def copies(src: torch.Tensor = src, dst: torch.Tensor = dst, n: int = n) -> None:
            for _ in range(n):
                dst.copy_(src)

        rows.append(_row(("host->host", "pageable", "blocking"), size, timed(cpu, copies), n))
    progress(len(sizes), len(sizes), "done")
    return rows
