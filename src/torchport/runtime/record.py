"""What the observer saw: counts and first occurrences, keyed by the user's sites.

Plain data only; :mod:`torchport.runtime.checks` turns it into Findings and report facts.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from torchport.findings import Finding
from torchport.runtime.sites import Site


@dataclass
class TransferStats:
    count: int = 0
    bytes: int = 0


SYNC_EVERY_N_STEPS = 4  # a site that syncs at least every 4th step is in the hot loop
# ... seen at least this often: two syncs are as likely a once-per-epoch read in a short run
# (4 steps an epoch) as a sync on every step, and say nothing about a steady habit.
MIN_SYNCS_IN_LOOP = 3


@dataclass(frozen=True)
class Cause:
    """Where inside a library a sync was made (``via``), and the user's cheaper way.

    ``fix`` is None when torch leaves the user none (then the sync is no finding); a sync the
    user chose by a call of theirs (``warn``) is a warning, a library's own habit a suggestion.
    """

    via: str
    fix: str | None
    warn: bool = False


@dataclass
class SyncStats:
    count: int = 0
    first_step: int = 0
    last_step: int = 0
    # the same by the outermost calls of a model (the steps of a loop with no batches)
    first_pass: int = 0
    last_pass: int = 0
    cause: Cause | None = None  # set when library code made the sync (see causes.py)

    def in_loop(self, span: int) -> bool:
        """Whether the syncs, spread over ``span`` steps, came (nearly) every step."""
        # A sync on (nearly) every step stalls the pipeline; one per epoch or every N steps is
        # exactly what the fix recommends, so it must not be flagged.
        # n syncs spread over `span` steps are n - 1 gaps apart: every 4th step at the most
        enough = self.count >= MIN_SYNCS_IN_LOOP
        return enough and span > 0 and (self.count - 1) * SYNC_EVERY_N_STEPS >= span


LOADER_WINDOW = 8  # batches per window of the wait share (how steady the waiting was)


@dataclass
class LoaderStats:
    kind: str = "DataLoader"  # or "DeviceLoader", timed where its batches are taken
    batches: int = 0
    wait_s: float = 0.0
    step_s: float = 0.0
    first_wait_s: float = 0.0
    num_workers: int = 0
    pin_memory: bool | None = False  # None for a DeviceLoader: it stages through its own buffers
    last_end: float | None = None
    window_shares: list[float] = field(default_factory=list)  # waiting share per full window
    _window: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])  # batches, wait, step

    def add_batch(self, wait_s: float, step_s: float) -> None:
        self.batches += 1
        self.wait_s += wait_s
        self.step_s += step_s
        window = self._window
        window[0] += 1
        window[1] += wait_s
        window[2] += step_s
        if window[0] == LOADER_WINDOW:
            busy = window[1] + window[2]
            self.window_shares.append(window[1] / busy if busy > 0 else 0.0)
            window[:] = [0.0, 0.0, 0.0]


@dataclass
class Record:
    """Everything observed in one run, cheap to update from the hot path."""

    accelerator: str | None = None
    step: int = 0
    ops_by_device: Counter[str] = field(default_factory=Counter)
    cpu_op_sites: Counter[Site] = field(default_factory=Counter)
    # (site, direction, pinned, non_blocking) -> count and bytes
    transfers: dict[tuple[Site, str, bool, bool], TransferStats] = field(default_factory=dict)
    syncs: dict[tuple[Site, str], SyncStats] = field(default_factory=dict)
    float64_origins: Counter[Site] = field(default_factory=Counter)
    promotions: Counter[tuple[Site, str]] = field(default_factory=Counter)
    loaders: dict[Site, LoaderStats] = field(default_factory=dict)
    # Findings decided on the spot (one per site and code), in the order they happened.
    immediate: dict[tuple[str, Site | None, str], Finding] = field(default_factory=dict)
    # Calls of a model (its steps) and those that ran with the function mode off (steady.py):
    # ops_by_device and cpu_op_sites count only the ops of the others.
    model_calls: int = 0
    model_calls_unobserved: int = 0
    # Whether a DataLoader batch or a backward has counted a step; a sampling or decoding loop
    # has neither, and its steps are the outermost calls of a model (the tracker's passes).
    batch_steps: bool = False
    # torchport's own failures, caught at its boundary so that the program runs on unchanged.
    internal_errors: list[str] = field(default_factory=list)

    def add_transfer(
        self, site: Site, direction: str, pinned: bool, non_blocking: bool, nbytes: int
    ) -> None:
        key = (site, direction, pinned, non_blocking)
        stats = self.transfers.get(key)
        if stats is None:
            stats = self.transfers[key] = TransferStats()
        stats.count += 1
        stats.bytes += nbytes

    def count_step(self) -> None:
        """A DataLoader batch or a ``backward()``: one step of the program's loop."""
        self.step += 1
        self.batch_steps = True

    def sync_span(self, stats: SyncStats) -> int:
        """How many steps a sync site's syncs spread over: counted by DataLoader batches and
        ``backward()``, or, in a program with neither, by the calls of a model."""
        if self.batch_steps:
            return stats.last_step - stats.first_step
        return stats.last_pass - stats.first_pass

    def add_sync(self, site: Site, kind: str, passes: int, cause: Cause | None = None) -> None:
        """A sync at ``site``, made after ``passes`` outermost calls of a model."""
        stats = self.syncs.get((site, kind))
        if stats is None:
            stats = self.syncs[(site, kind)] = SyncStats(
                first_step=self.step, first_pass=passes, cause=cause
            )
        stats.count += 1
        stats.last_step, stats.last_pass = self.step, passes

    def add_internal_error(self, where: str, exc: BaseException) -> None:
        text = f"{where}: {type(exc).__name__}: {exc}"
        if text not in self.internal_errors:
            self.internal_errors.append(text)

    def reported_at(self, site: Site | None, family: str) -> bool:
        """Whether a finding whose code starts with ``family`` was kept at ``site``'s line."""
        if site is None:
            return False
        return any(
            code.startswith(family)
            and at is not None
            and (at.path, at.line) == (site.path, site.line)
            for code, at, _ in self.immediate
        )

    def add_finding(self, finding: Finding, site: Site | None, key: str = "") -> bool:
        """Keep the first finding of a code at a site; True when it is new."""
        slot = (finding.code, site, key)
        if slot in self.immediate:
            return False
        self.immediate[slot] = finding
        return True
