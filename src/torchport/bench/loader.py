"""``torchport bench loader``: training-loop throughput of the ways to feed a device.

The protocol (ANCHORS.md, host->device transfer): the same host batches feed a synthetic model
whose step takes 0.5x, 1x and 2x the time one batch takes to copy, through

- a naive loop calling ``.to(device)`` per tensor (pageable, blocking);
- a DataLoader with ``pin_memory=True`` and ``non_blocking=True`` copies (CUDA only);
- DeviceLoader at several prefetch depths;
- data already on the device (the compute bound) and DeviceLoader with no model (the transfer
  bound).

A good loader reaches min(compute bound, transfer bound) in every regime. Reported per mode:
steps/s, that as a share of the bound, the device's idle share (1 - steps x compute-bound step
time / wall time) and the device memory allocated above what the loop started with.
Without CUDA the same loops run on the CPU: the "copy" is a host clone of the batch, and the
pinned, idle and memory figures are skipped.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import Any

import torch
from torch.utils.data import DataLoader, Dataset

from torchport.bench._common import NO_CUDA, Progress, has_cuda, no_progress, sync, timed
from torchport.transfer import DeviceLoader, to_device

Batch = dict[str, torch.Tensor]
WARMUP = 5


@dataclasses.dataclass(frozen=True)
class LoaderSpec:
    leaves: int = 16
    leaf_bytes: int = 256 << 10
    distinct_batches: int = 16
    steps: int = 100
    ratios: tuple[float, ...] = (0.5, 1.0, 2.0)
    depths: tuple[int, ...] = (1, 2, 4)
    repeats: int = 3  # best of: other processes share the machine


class _Cycle(Dataset[Batch]):
    """``steps`` batches drawn in turn from a few distinct ones (a sized, indexable source)."""

    def __init__(self, batches: list[Batch], steps: int) -> None:
        self.batches, self.steps = batches, steps

    def __len__(self) -> int:
        return self.steps

    def __getitem__(self, index: int) -> Batch:
        return self.batches[index % len(self.batches)]

    def __iter__(self) -> Iterator[Batch]:
        return (self[i] for i in range(self.steps))


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


def _run(device: torch.device, batches: Iterable[Batch], step: Callable[[Batch], None]) -> float:
    """Steps per second after a short warm-up, including the device work of the last step."""
    iterator = iter(batches)
    for _ in range(WARMUP):
        step(next(iterator))
    rest: list[int] = []

    def loop() -> None:
        for batch in iterator:
            step(batch)
            rest.append(1)

    seconds = timed(device, loop)
    return len(rest) / seconds


def _modes(
    device: torch.device, source: _Cycle, spec: LoaderSpec
) -> dict[str, Callable[[], Iterable[Batch]]]:
    """Each mode as a factory of a fresh pass over ``source``."""
    on_device = _Cycle([to_device(b, device) for b in source.batches], source.steps)
    modes: dict[str, Callable[[], Iterable[Batch]]] = {
        "naive .to() loop": lambda: ({k: v.to(device) for k, v in b.items()} for b in source),
    }
    if device.type == "cuda":
        pinned = DataLoader(source, batch_size=None, pin_memory=True)
        modes["DataLoader pin_memory + non_blocking"] = lambda: (
            to_device(b, device, non_blocking=True) for b in pinned
        )
    else:
        modes["DeviceLoader inline"] = lambda: DeviceLoader(source, device)
    for depth in spec.depths:
        modes[f"DeviceLoader prefetch={depth}"] = partial(
            DeviceLoader, source, device, prefetch=depth, background=True
        )
    modes["data already on device"] = lambda: on_device
    return modes


def _measure_mode(
    device: torch.device,
    batches: Callable[[], Iterable[Batch]],
    step: Callable[[Batch], None],
    repeats: int,
) -> tuple[float, float | None]:
    """Best steps/s of ``repeats`` passes, and extra device memory in MiB (None off CUDA)."""
    if device.type != "cuda":
        return max(_run(device, batches(), step) for _ in range(repeats)), None
    sync(device)
    base = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    rate = max(_run(device, batches(), step) for _ in range(repeats))
    return rate, (torch.cuda.max_memory_allocated(device) - base) / (1 << 20)


def measure_loader(
    spec: LoaderSpec = LoaderSpec(), progress: Progress = no_progress
) -> dict[str, Any]:
    """Run the protocol; one row per (regime, mode), plus the two bounds."""
    cuda = has_cuda()
    device = torch.device("cuda", torch.cuda.current_device()) if cuda else torch.device("cpu")
    source = _Cycle(_host_batches(spec), spec.steps)
    alone = partial(DeviceLoader, source, device, background=True)
    transfer_bound = _measure_mode(device, alone, _no_model, spec.repeats)[0]
    copy_seconds = 1 / transfer_bound if cuda else _clone_seconds(source)
    unit = _unit_seconds(device)
    rows: list[dict[str, Any]] = []
    total = len(spec.ratios) * len(_modes(device, source, spec))
    for ratio in spec.ratios:
        model = _Model(device, max(1, round(ratio * copy_seconds / unit)))
        results: dict[str, tuple[float, float | None]] = {}
        for name, batches in _modes(device, source, spec).items():
            progress(len(rows) + len(results), total, f"{ratio:g}x copy time: {name}")
            results[name] = _measure_mode(device, batches, model, spec.repeats)
        compute_bound = results["data already on device"][0]
        bound = min(compute_bound, transfer_bound)
        for name, (rate, mib) in results.items():
            idle = max(0.0, 1 - rate / compute_bound) if cuda else None
            rows.append({"regime": f"{ratio:g}x copy", "mode": name, "steps_per_s": rate,
                         "share_of_bound": rate / bound, "device_idle_share": idle,
                         "extra_mib": mib})  # fmt: skip
    progress(total, total, "done")
    return {
        "device": torch.cuda.get_device_name(device) if cuda else "cpu",
        "spec": dataclasses.asdict(spec),
        "batch_mib": spec.leaves * spec.leaf_bytes / (1 << 20),
        "copy_ms": copy_seconds * 1e3,
        "loader_alone_steps_per_s": transfer_bound,
        "rows": rows,
        "skipped": [] if cuda else _CPU_SKIPPED,
    }


_CPU_SKIPPED = [
    NO_CUDA.format(version=torch.__version__),
    "DataLoader pin_memory=True: pinning needs CUDA",
    "device idle share and extra device memory: there is no device; the 'copy' is a host clone",
]


def _no_model(batch: Batch) -> None:
    del batch


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


def _unit_seconds(device: torch.device) -> float:
    """Seconds one of the model's matrix products takes on ``device`` (best of 3)."""
    probe = _Model(device, 20)
    batch = {"x": torch.zeros(1, device=device)}
    probe(batch)  # warm-up
    return min(timed(device, lambda: probe(batch)) for _ in range(3)) / probe.iters
