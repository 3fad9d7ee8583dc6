"""DeviceLoader and to_device overhead on the CPU, against their plain peers, in one run.

Targets (issue 5): a DeviceLoader loop costs <= 3 % more wall time than the plain loop over the
same DataLoader, and ``to_device`` spends <= 100 µs of Python per 64-leaf nested batch. Runs with
one thread; loops are interleaved and repeated so that other load on the machine hits both sides.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/loader_overhead.py
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import statistics
import time
from collections import namedtuple
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch.utils.data import DataLoader, TensorDataset

from torchport.transfer import DeviceLoader, to_device

REPEATS = 9
LOOP_REPEATS = 25
Quad = namedtuple("Quad", ["a", "b", "c", "d"])


def _training_step() -> Callable[[Any], None]:
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

    def step(batch: Any) -> None:
        x, y = batch
        loss = torch.nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    return step


def _loop_seconds(batches: Iterable[Any], step: Callable[[Any], None]) -> tuple[float, float]:
    """Wall and process-CPU seconds of one pass (CPU time is robust to other load)."""
    wall, cpu = time.perf_counter(), time.process_time()
    for batch in batches:
        step(batch)
    return time.perf_counter() - wall, time.process_time() - cpu


def loader_ratios() -> tuple[list[float], list[float], float, float]:
    """Per repeat DeviceLoader / plain ratios (wall, CPU); ms per plain step; µs added per batch."""
    dataset = TensorDataset(torch.randn(4096, 64), torch.randint(0, 10, (4096,)))
    loader = DataLoader(dataset, batch_size=64, shuffle=True)
    step = _training_step()
    _loop_seconds(loader, step)  # warm-up
    walls, cpus, plain_times = [], [], []
    for i in range(LOOP_REPEATS):
        # Alternate which side runs first, so that a drift in machine load favours neither.
        if i % 2:
            wrapped = _loop_seconds(DeviceLoader(loader, "cpu"), step)
            plain = _loop_seconds(loader, step)
        else:
            plain = _loop_seconds(loader, step)
            wrapped = _loop_seconds(DeviceLoader(loader, "cpu"), step)
        walls.append(wrapped[0] / plain[0])
        cpus.append(wrapped[1] / plain[1])
        plain_times.append(plain[0])
    idle_plain = min(_loop_seconds(loader, _skip)[1] for _ in range(REPEATS))
    idle_ours = min(_loop_seconds(DeviceLoader(loader, "cpu"), _skip)[1] for _ in range(REPEATS))
    added_us = 1e6 * (idle_ours - idle_plain) / len(loader)
    return walls, cpus, 1e3 * statistics.median(plain_times) / len(loader), added_us


def _skip(batch: Any) -> None:
    del batch


def nested_batch() -> dict[str, Any]:
    """64 tensors: 16 in a list, 16 in a dict, 16 in a tuple, 16 in namedtuples, plus metadata."""
    return {
        "list": [torch.ones(8) for _ in range(16)],
        "dict": {f"k{i}": torch.ones(8) for i in range(16)},
        "tuple": tuple(torch.ones(8) for _ in range(16)),
        "named": [Quad(*(torch.ones(8) for _ in range(4))) for _ in range(4)],
        "ids": list(range(16)),
        "name": "batch",
    }


def _naive(obj: Any) -> Any:
    """The hand-written peer: a recursive .to('cpu') over the same containers."""
    if isinstance(obj, torch.Tensor):
        return obj.to("cpu")
    if isinstance(obj, dict):
        return {k: _naive(v) for k, v in obj.items()}
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_naive(v) for v in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_naive(v) for v in obj)
    return obj


def per_batch_us(move: Callable[[Any], Any], batch: Any, calls: int = 2000) -> float:
    best = float("inf")
    for _ in range(REPEATS):
        start = time.perf_counter()
        for _ in range(calls):
            move(batch)
        best = min(best, (time.perf_counter() - start) / calls)
    return best * 1e6


def main() -> None:
    torch.set_num_threads(1)
    walls, cpus, step_ms, added_us = loader_ratios()
    print(f"DeviceLoader vs plain DataLoader loop (CPU, {step_ms:.3f} ms per plain step, "
          f"{LOOP_REPEATS} interleaved repeats)")  # fmt: skip
    for label, ratios in (("wall-time", walls), ("CPU-time", cpus)):
        print(f"  {label} ratio: median {statistics.median(ratios):.4f}, "
              f"best {min(ratios):.4f}, worst {max(ratios):.4f}  (target <= 1.03)")  # fmt: skip
    print(f"  loop without a model: DeviceLoader adds {added_us:.1f} µs per batch "
          f"= {added_us / 10 / step_ms:.2f} % of a plain step")  # fmt: skip
    batch = nested_batch()
    ours = per_batch_us(lambda b: to_device(b, "cpu"), batch)
    naive = per_batch_us(_naive, batch)
    cast = per_batch_us(lambda b: to_device(b, "cpu", dtype=torch.float16), batch)
    print("to_device on a 64-leaf nested batch (CPU -> CPU: all of it is Python overhead)")
    print(f"  to_device: {ours:.1f} µs/batch = {ours / 100:.2f} x the 100 µs target")
    print(f"  hand-written recursive .to(): {naive:.1f} µs/batch; to_device / naive = "
          f"{ours / naive:.2f}")  # fmt: skip
    print(f"  with dtype=float16 (64 real casts, not overhead): {cast:.1f} µs/batch")


if __name__ == "__main__":
    main()
