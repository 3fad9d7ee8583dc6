"""From what was observed to what is reported: end-of-run findings and the inventories."""

from __future__ import annotations

from typing import Any

from torchport.findings import Finding, Fix, Severity
from torchport.rules import Rule
from torchport.rules.device import ComputeOnCpuBesideAccelerator
from torchport.rules.transfer import (
    DeviceToHostInHotLoop,
    ImplicitSyncInHotLoop,
    InputStarvation,
    ItemInHotLoop,
    SynchronizeInHotLoop,
)
from torchport.runtime.record import LOADER_WINDOW, LoaderStats, Record, SyncStats
from torchport.runtime.sites import Site

CPU_SHARE_THRESHOLD = 0.2  # below this, CPU ops are bookkeeping, not a model left behind
MIN_CPU_OPS = 50
STARVATION_SHARE = 0.10  # the TensorBoard profiler warns at 5 %; we warn at twice that
# Evidence before TP250 (see starvation_evidence): three full windows of batches, a second of
# loop time (below it, timer and scheduler noise is a large share, and little time is at
# stake), and the share above the threshold in two windows of three.
STARVATION_MIN_BATCHES = 3 * LOADER_WINDOW
STARVATION_MIN_SECONDS = 1.0
STARVATION_STEADY = 2 / 3


def sync_rule(kind: str) -> type[Rule]:
    """The static rule that describes the same synchronization, so codes match `check`."""
    if kind in (".item()", ".tolist()"):
        return ItemInHotLoop
    if kind in (".numpy()", "numpy.asarray(tensor)", ".cpu()", ".to('cpu')", ".copy_()"):
        return DeviceToHostInHotLoop
    if "synchronize" in kind or "empty_cache" in kind:
        return SynchronizeInHotLoop
    return ImplicitSyncInHotLoop


def findings(record: Record) -> list[Finding]:
    out = list(record.immediate.values())
    out += _cpu_compute(record)
    out += _syncs_in_loop(record)
    out += [f for site, stats in record.loaders.items() for f in _starvation(site, stats, record)]
    return out


def _cpu_compute(record: Record) -> list[Finding]:
    if record.accelerator is None:
        return []
    total = sum(record.ops_by_device.values())
    cpu = record.ops_by_device.get("cpu", 0)
    if cpu < MIN_CPU_OPS or cpu < CPU_SHARE_THRESHOLD * total:
        return []
    top = record.cpu_op_sites.most_common(3)
    where = ", ".join(f"{site.short()} ({count} ops)" for site, count in top)
    first = top[0][0].location() if top else None
    return [
        ComputeOnCpuBesideAccelerator.finding(
            f"{record.accelerator} is available but {cpu} of {total} tensor ops "
            f"({cpu / total:.0%}) ran on the CPU; most at {where}{_sampled(record)}",
            first,
            Fix(
                "move the model and each batch to the accelerator: "
                "model.to(device); x = x.to(device, non_blocking=True)"
            ),
            cpu_ops=cpu,
            total_ops=total,
        )
    ]


def _sampled(record: Record) -> str:
    if not record.model_calls_unobserved:
        return ""
    observed = record.model_calls - record.model_calls_unobserved
    return f" (ops counted in the {observed} of {record.model_calls} model calls observed fully)"


# Syncs whose fix is not "read it less often".
_SIZED_BY_VALUES = (
    "the result's size depends on the values, so the host waits to learn it: keep a fixed "
    "shape (a mask and torch.where, scatter_add_/index_add_ over a known size), or pass the "
    "size when the op takes it (bincount's minlength still reads the maximum)"
)
_SIZED_KINDS = (
    "torch.unique", ".unique()", "torch.unique_consecutive", "torch.bincount", ".bincount()",
    "torch.masked_select", ".masked_select()", "torch.argwhere", ".argwhere()",
    "torch.nonzero", ".nonzero()",
)  # fmt: skip
_SYNC_FIXES = {
    "tensor[bool mask]": (
        "the result's size depends on the mask, so the host reads the mask's count: keep a fixed "
        "shape instead (multiply by the mask, or torch.where), or index once per epoch"
    ),
    **dict.fromkeys(_SIZED_KINDS, _SIZED_BY_VALUES),
}


def _syncs_in_loop(record: Record) -> list[Finding]:
    out = []
    device = record.accelerator or "the device"
    loop = "the training loop" if record.batch_steps else "the loop that calls the model"
    for (site, kind), stats in record.syncs.items():
        cause = stats.cause
        span = record.sync_span(stats)
        if not stats.in_loop(span) or (cause is not None and cause.fix is None):
            continue  # a fix of None: torch leaves the user no cheaper way
        if cause is None:
            what = f"{kind} synchronizes with {device}"
            fix = _SYNC_FIXES.get(
                kind, "keep the value on the device and read it once per epoch or every N steps"
            )
        else:
            what = f"{kind} inside {cause.via} synchronizes with {device}"
            fix = cause.fix or (
                f"the sync is made inside {cause.via}, called from this line: call it less "
                "often, or use a variant that keeps the value on the device"
            )
        library_habit = cause is not None and not cause.warn
        severity = Severity.INFO if library_habit else _per_step(kind, stats, span + 1)
        via: dict[str, Any] = {"via": cause.via} if cause is not None else {}
        out.append(
            sync_rule(kind).finding(
                f"{what} inside {loop} ({stats.count} times)",
                site.location(),
                Fix(fix),
                severity=severity,
                count=stats.count,
                **via,
            )
        )
    return out


# Steps are counted at each batch drawn and each backward pass (two an iteration in most
# loops): a site reading values more often than this per step does so in a loop inside it.
REPEATS_PER_STEP = 1.5


def _per_step(kind: str, stats: SyncStats, steps: int) -> Severity | None:
    """A warning for a value read many times a step (in a loop inside it); otherwise the rule's
    own severity: a suggestion for one read a step, a warning for synchronize()."""
    if sync_rule(kind) is not SynchronizeInHotLoop and stats.count > REPEATS_PER_STEP * steps:
        return Severity.WARNING
    return None


def starvation_evidence(stats: LoaderStats) -> str | None:
    """Why the waits of a loader are no evidence of starvation yet (None: they are).

    A handful of short steps is dominated by start-up (allocator warm-up, lazy init, the first
    batch of each epoch) and by the scheduler's noise, so the finding needs enough batches,
    enough loop time, and a share of waiting that holds across the run, not in one burst.
    """
    if stats.batches < STARVATION_MIN_BATCHES:
        return f"{stats.batches} batches (fewer than {STARVATION_MIN_BATCHES})"
    if stats.wait_s + stats.step_s < STARVATION_MIN_SECONDS:
        return f"{stats.wait_s + stats.step_s:.2f} s of loop time"
    windows = stats.window_shares
    starved = sum(1 for share in windows if share >= STARVATION_SHARE)
    if starved < STARVATION_STEADY * len(windows):
        return f"waiting above {STARVATION_SHARE:.0%} in only {starved} of {len(windows)} windows"
    return None


def _starvation(site: Site, stats: LoaderStats, record: Record) -> list[Finding]:
    busy = stats.wait_s + stats.step_s
    if busy <= 0 or stats.wait_s / busy < STARVATION_SHARE:
        return []
    if starvation_evidence(stats) is not None:
        return []
    share = stats.wait_s / busy
    wait_ms = 1000 * stats.wait_s / stats.batches
    step_ms = 1000 * stats.step_s / stats.batches
    fixes = []
    device_loader = stats.kind == "DeviceLoader"  # it pins and copies ahead by itself
    if stats.num_workers == 0:
        where = " on the DataLoader it wraps" if device_loader else ""
        fixes.append(f"set num_workers (e.g. 4) and persistent_workers=True{where}")
    if record.accelerator is not None and stats.pin_memory is False:
        fixes.append("set pin_memory=True")
    if record.accelerator is not None and not device_loader:
        fixes.append("wrap the loader in torchport.DeviceLoader to copy the next batch early")
    fixes = fixes or ["make the dataset's __getitem__ cheaper or add more workers"]
    settings = f"num_workers={stats.num_workers}"
    if stats.pin_memory is not None:
        settings += f", pin_memory={stats.pin_memory}"
    return [
        InputStarvation.finding(
            f"the loop waited {wait_ms:.2f} ms per batch for this {stats.kind} against "
            f"{step_ms:.2f} ms in the step: {share:.0%} of its time went to waiting for data, "
            f"measured over {stats.batches} batches and {busy:.1f} s, steady in "
            f"{_steady(stats)} ({settings})",
            site.location(),
            Fix("; ".join(fixes)),
            wait_share=round(share, 3),
            wait_ms=round(wait_ms, 3),
            step_ms=round(step_ms, 3),
            batches=stats.batches,
            seconds=round(busy, 3),
        )
    ]


def _steady(stats: LoaderStats) -> str:
    windows = stats.window_shares
    starved = sum(1 for share in windows if share >= STARVATION_SHARE)
    return f"{starved} of {len(windows)} windows of {LOADER_WINDOW} batches"


def facts(record: Record) -> dict[str, Any]:
    """The inventories, as JSON-able report facts."""
    out: dict[str, Any] = {}
    if record.accelerator is not None:
        out["accelerator"] = record.accelerator
        if record.ops_by_device:
            out["ops_in_forward_by_device"] = dict(record.ops_by_device)
    if record.model_calls_unobserved:
        # steady.py: these model calls ran with the function mode off; op counts skip them.
        out["steady_state"] = {
            "model_calls": record.model_calls,
            "observed_fully": record.model_calls - record.model_calls_unobserved,
            "sampled": ["ops_in_forward_by_device"],
        }
    if record.transfers:
        out["transfers"] = [
            {
                "site": str(site), "direction": direction, "count": stats.count,
                "bytes": stats.bytes, "source": "pinned" if pinned else "pageable",
                "non_blocking": non_blocking,
            }
            for (site, direction, pinned, non_blocking), stats in record.transfers.items()
        ]  # fmt: skip
    if record.syncs:
        out["syncs"] = [
            {
                "site": str(site),
                "call": kind,
                "count": s.count,
                "in_loop": s.in_loop(record.sync_span(s)),
                "inside": None if s.cause is None else s.cause.via,
            }
            for (site, kind), s in record.syncs.items()
        ]
    if record.loaders:
        out["loaders"] = [
            {
                "site": str(site), "loader": s.kind, "batches": s.batches,
                "wait_ms": round(1000 * s.wait_s, 2),
                "step_ms": round(1000 * s.step_s, 2), "num_workers": s.num_workers,
                "pin_memory": s.pin_memory,
            }
            for site, s in record.loaders.items()
        ]  # fmt: skip
    return out
