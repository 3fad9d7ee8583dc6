"""``torchport bench loader``: training-loop throughput of the ways to feed a device.

The protocol (ANCHORS.md, host->device transfer): the same host batches feed a synthetic model
whose step takes 0.5x, 1x and 2x the time the loader needs per batch, through

- a naive loop calling ``.to(device)`` per tensor (pageable, blocking);
- a DataLoader with ``pin_memory=True`` and ``non_blocking=True`` copies (CUDA only);
- DeviceLoader at several prefetch depths;
- data already on the device (the compute bound) and DeviceLoader with no model at each depth
  (the transfer bound: the best of them).

A good loader reaches min(compute bound, transfer bound) in every regime. Every loop is timed the
same way, in its steady state on the device's clock (``_loop.py``). The model is sized from its
measured step cost (a fixed part plus a part per matrix product), and each regime reports the
ratio it actually reached. Reported per mode: steps/s, that as a share of the bound, the device's
idle share (from per-step events; ``unavoidable_idle_share`` is what the bound itself leaves idle),
and the device memory allocated above what the loop started with. Then the extra device memory
per prefetch slot, and the drift of reserved memory over a long DeviceLoader run.
Without CUDA the same loops run on the CPU: the "copy" is a host clone of the batch, and the
pinned, idle and memory figures are not measured.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import Any

import torch
from torch.utils.data import DataLoader, Dataset

from torchport.bench._common import NO_CUDA, Progress, has_cuda, no_progress, timed
from torchport.bench._loop import WARMUP, Clock, Pass, best_pass, fit_step_cost
from torchport.bench._memory import per_slot_mib, reserved_drift
from torchport.transfer import DeviceLoader, to_device

Batch = dict[str, torch.Tensor]
ON_DEVICE = "data already on device"


@dataclasses.dataclass(frozen=True)
class LoaderSpec:
    leaves: int = 16
    leaf_bytes: int = 256 << 10
    distinct_batches: int = 16
    steps: int = 100
    ratios: tuple[float, ...] = (0.5, 1.0, 2.0)
    depths: tuple[int, ...] = (1, 2, 4)
    repeats: int = 3  # best of: other processes share the machine
    drift_steps: int = 2000  # the long run that reserved memory must not grow over


class _Cycle(Dataset[Batch]):
    """``length`` batches drawn in turn from a few distinct ones (a sized, indexable source)."""

    def __init__(self, batches: list[Batch], length: int) -> None:
        self.batches, self.length = batches, length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> Batch:
        return self.batches[index % len(self.batches)]

    def __iter__(self) -> Iterator[Batch]:
        return (self[i] for i in range(self.length))


class _Model:
    """``iters`` matrix products on the device, reading the batch so the step depends on it."""

    def __init__(self, device: torch.device, iters: int) -> None:
        size = 1024 if device.type == "cuda" else 96
        self.weight = torch.eye(size, device=device)
        self.iters = iters

    def __call__(self, batch: Batch) -> None:
        hidden = self.weight + next(iter(batch.values())).view(-1)[:1]
        for _ in range(self.iters):
            hidden = torch.mm(hidden, self.weight)


def _no_model(batch: Batch) -> None:
    del batch


class _Bench:
    """One run of the protocol: the device, the source, the clock."""

    def __init__(self, spec: LoaderSpec) -> None:
        self.spec = spec
        self.cuda = has_cuda()
        cuda = torch.device("cuda", torch.cuda.current_device()) if self.cuda else None
        self.device = cuda or torch.device("cpu")
        self.clock = Clock(self.device)
        # Longer than a pass reads, so that no timed window sees the pipeline drain.
        length = WARMUP + spec.steps + max(spec.depths) + 2
        self.source = _Cycle(_host_batches(spec), length)
        self.on_device = _Cycle([to_device(b, self.device) for b in self.source.batches], length)

    def measure(self, batches: Callable[[], Iterable[Batch]], step: Callable[[Batch], Any]) -> Pass:
        return best_pass(self.clock, batches, step, self.spec.steps, self.spec.repeats)

    def step_seconds(self, iters: int) -> float:
        """Seconds per step of the model with ``iters`` products, on data already there."""
        return 1 / self.measure(lambda: self.on_device, _Model(self.device, iters)).steps_per_s

    def loader(self, depth: int) -> Callable[[], Iterable[Batch]]:
        return partial(DeviceLoader, self.source, self.device, prefetch=depth, background=True)

    def modes(self) -> dict[str, Callable[[], Iterable[Batch]]]:
        """Each mode as a factory of a fresh pass over the source."""
        device, source = self.device, self.source
        modes: dict[str, Callable[[], Iterable[Batch]]] = {
            "naive .to() loop": lambda: ({k: v.to(device) for k, v in b.items()} for b in source),
        }
        if self.cuda:
            pinned = DataLoader(source, batch_size=None, pin_memory=True)
            modes["DataLoader pin_memory + non_blocking"] = lambda: (
                to_device(b, device, non_blocking=True) for b in pinned
            )
        else:
            modes["DeviceLoader inline"] = lambda: DeviceLoader(source, device)
        for depth in self.spec.depths:
            modes[f"DeviceLoader prefetch={depth}"] = self.loader(depth)
        modes[ON_DEVICE] = lambda: self.on_device
        return modes


def measure_loader(
    spec: LoaderSpec = LoaderSpec(), progress: Progress = no_progress
) -> dict[str, Any]:
    """Run the protocol; one row per (regime, mode), the bounds, memory and what was skipped."""
    bench = _Bench(spec)
    alone = {d: bench.measure(bench.loader(d), _no_model).steps_per_s for d in spec.depths}
    transfer_bound = max(alone.values())
    copy_seconds = 1 / transfer_bound if bench.cuda else _clone_seconds(bench.source)
    cost = fit_step_cost(bench.step_seconds)
    rows: list[dict[str, Any]] = []
    regimes: list[dict[str, Any]] = []
    total = len(spec.ratios) * len(bench.modes())
    for ratio in spec.ratios:
        model = _Model(bench.device, cost.iters_for(ratio * copy_seconds))
        results: dict[str, Pass] = {}
        for name, batches in bench.modes().items():
            progress(len(rows) + len(results), total, f"{ratio:g}x copy time: {name}")
            results[name] = bench.measure(batches, model)
        regime = f"{ratio:g}x copy"
        compute_bound = results[ON_DEVICE].steps_per_s
        bound = min(compute_bound, transfer_bound)
        regimes.append({"regime": regime, "target_ratio": ratio, "model_iters": model.iters,
                        "compute_ms": 1e3 / compute_bound,
                        "achieved_ratio": 1 / compute_bound / copy_seconds,
                        "unavoidable_idle_share": 1 - bound / compute_bound})  # fmt: skip
        rows += [_row(regime, name, p, bound, results[ON_DEVICE]) for name, p in results.items()]
    progress(total, total, "done")
    return {
        "device": torch.cuda.get_device_name(bench.device) if bench.cuda else "cpu",
        "spec": dataclasses.asdict(spec),
        "batch_mib": spec.leaves * spec.leaf_bytes / (1 << 20),
        "copy_ms": copy_seconds * 1e3,
        "loader_alone_steps_per_s": transfer_bound,
        "loader_alone_by_depth": {str(d): rate for d, rate in alone.items()},
        "step_cost_ms": {"fixed": cost.fixed * 1e3, "per_iteration": cost.per_iter * 1e3},
        "regimes": regimes,
        "rows": rows,
        "memory": _memory(bench, rows, cost.iters_for(copy_seconds)),
        "skipped": [] if bench.cuda else _CPU_SKIPPED,
    }


def _row(regime: str, mode: str, result: Pass, bound: float, on_device: Pass) -> dict[str, Any]:
    loader_mib = None
    if result.extra_mib is not None and on_device.extra_mib is not None:
        loader_mib = result.extra_mib - on_device.extra_mib  # beyond the model's own temporaries
    return {"regime": regime, "mode": mode, "steps_per_s": result.steps_per_s,
            "share_of_bound": result.steps_per_s / bound,
            "device_idle_share": result.idle_share, "extra_mib": result.extra_mib,
            "loader_mib": loader_mib}  # fmt: skip


def _memory(bench: _Bench, rows: list[dict[str, Any]], iters: int) -> dict[str, Any]:
    """Extra device memory per prefetch slot, and reserved-memory drift over a long run."""
    spec = bench.spec
    if not bench.cuda:
        return {"extra_mib_per_prefetch_slot": None, "reserved_drift_mib": None,
                "drift_steps": 0, "not_measured": "needs CUDA"}  # fmt: skip
    depth = max(spec.depths)
    drift = reserved_drift(bench.device, bench.loader(depth)(), _Model(bench.device, iters),
                           spec.drift_steps)  # fmt: skip
    return {"extra_mib_per_prefetch_slot": per_slot_mib(rows, spec.depths),
            "reserved_drift_mib": drift.reserved_mib, "allocated_drift_mib": drift.allocated_mib,
            "drift_steps": drift.steps, "drift_prefetch": depth}  # fmt: skip


_CPU_SKIPPED = [
    NO_CUDA.format(version=torch.__version__),
    "DataLoader pin_memory=True: pinning needs CUDA",
    "device idle share: not measured (needs CUDA: it is read off the GPU's timeline)",
    "extra device memory per prefetch slot and reserved-memory drift: not measured "
    "(needs CUDA); the 'copy' is a host clone",
]


def _host_batches(spec: LoaderSpec) -> list[Batch]:
    numel = max(1, spec.leaf_bytes // 4)
    return [{f"x{i}": torch.randn(numel) for i in range(spec.leaves)}
            for _ in range(spec.distinct_batches)]  # fmt: skip


def _clone_seconds(source: _Cycle) -> float:
    """Seconds to clone one batch on the host: the CPU stand-in for a copy (best of 3)."""
    batches = source.batches
    cpu = torch.device("cpu")
    runs = (timed(cpu, lambda: [{k: v.clone() for k, v in b.items()} for b in batches])
            for _ in range(3))  # fmt: skip
    return min(runs) / len(batches)
