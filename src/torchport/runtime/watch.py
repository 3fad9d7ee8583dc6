"""``torchport.watch``: observe (and optionally simulate) a block of code or a function.

    with torchport.watch(simulate="cuda") as w:
        train()
    for finding in w.findings:
        print(finding.location, finding.message)

Everything installed on entry (the function mode, the global module hooks, the DataLoader timer,
the simulation patches) is removed on exit, also when the block raises.

A function mode is per thread. Under ``simulate``, threads started inside the block (a prefetch
thread such as DeviceLoader's, a DataLoader's pin-memory thread) run under the observer too,
since only it can make the simulated device; in observe mode they run as they are.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable
from types import TracebackType
from typing import Any, TypeVar

import torch

from torchport.findings import Finding, Location, Report
from torchport.rules import matches
from torchport.runtime import checks, known_failures
from torchport.runtime.amp import AmpMonitor
from torchport.runtime.apis import ApiMonitor
from torchport.runtime.failure import Failure, failure
from torchport.runtime.inputs import LoaderTimer, check_module_inputs
from torchport.runtime.modules import ModuleTracker
from torchport.runtime.observer import Observer, Options
from torchport.runtime.optimizers import OptimizerPrecision
from torchport.runtime.record import Record
from torchport.runtime.samplers import SamplerMonitor
from torchport.runtime.simulate import Simulation
from torchport.runtime.sites import Provenance, user_site, warnings_at_user_line

F = TypeVar("F", bound=Callable[..., Any])


def _real_accelerator() -> str | None:
    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return None


class watch:
    """Observe torch calls inside a ``with`` block or a decorated function.

    ``simulate`` ("cuda", "cuda:N" or "mps") pretends that accelerator on a CPU-only machine.
    ``every_step`` observes every op of every step (slower); by default, once a model has been
    called 32 times from a line, one step in 16 is observed op by op, and syncs, copies and
    anything new are observed in every step.
    ``select``/``ignore`` filter findings by code or prefix. After the block, ``findings`` holds
    what was found and ``report()`` the findings with the transfer, sync and loader inventories.
    """

    def __init__(
        self,
        simulate: str | None = None,
        *,
        check_finite: bool = False,
        strict: bool = False,
        every_step: bool = False,
        select: Iterable[str] = ("ALL",),
        ignore: Iterable[str] = (),
    ) -> None:
        self.simulate = simulate
        self.options = Options(
            check_finite=check_finite, strict=strict, steady_state=not every_step
        )
        self.select, self.ignore = list(select), list(ignore)
        self.findings: list[Finding] = []
        self.record = Record()
        self.failure: Failure | None = None
        self._active: list[Callable[[], None]] = []
        if simulate is not None:
            Simulation(simulate)  # validate the spec now, not inside the user's program

    def __enter__(self) -> watch:
        self.findings = []
        self.failure = None
        sim = Simulation(self.simulate) if self.simulate is not None else None
        accelerator = f"{sim.kind} (simulated)" if sim is not None else _real_accelerator()
        self.record = record = Record(accelerator=accelerator)
        provenance = Provenance()
        tracker = ModuleTracker(on_enter=lambda module, args: None)
        observer = Observer(record, provenance, tracker, sim, self.options)
        tracker._on_enter = functools.partial(check_module_inputs, observer)
        tracker.on_internal_error = observer.internal
        loaders = LoaderTimer(observer)
        amp, apis, samplers = AmpMonitor(observer), ApiMonitor(observer), SamplerMonitor(observer)
        optimizers = OptimizerPrecision(observer, amp)
        optimizer_sites = observer.explainer.optimizer_sites
        optimizer_sites.on_internal_error = observer.internal
        steps: list[tuple[Callable[[], None], Callable[[], None]]] = []
        if sim is not None:
            sim._on_sync = observer.on_sync
            sim.made_at = functools.partial(_made_at, provenance)
            steps.append((sim.install, sim.restore))
            steps.append((lambda: _patch_thread_start(observer), _unpatch_thread_start))
        elif accelerator == "cuda":
            steps.append((lambda: _patch_synchronize(observer), _unpatch_synchronize))
        steps += [
            (lambda: _patch_from_numpy(observer), _unpatch_from_numpy),
            (lambda: _patch_load(observer), _unpatch_load),
            (warnings_at_user_line.install, warnings_at_user_line.remove),
            (tracker.install, tracker.remove),
            (observer.explainer.state_sites.install, observer.explainer.state_sites.remove),
            (optimizer_sites.install, optimizer_sites.remove),
            (amp.install, amp.remove),
            (optimizers.install, optimizers.remove),
            (apis.install, apis.remove),
            (samplers.install, samplers.remove),
            (loaders.install, loaders.remove),
            (observer.__enter__, functools.partial(_close, observer)),
        ]
        try:
            for install, remove in steps:
                install()
                self._active.append(remove)
        except BaseException:
            self._undo()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._undo()
        try:
            self.failure = failure(exc) if exc is not None else None
            found = checks.findings(self.record)
            if exc is not None and self.failure is not None:
                known = known_failures.finding_for(exc, self.failure.site)
                if known is not None and not any(f.code == known.code for f in found):
                    found.append(known)
                elif known is None and self.record.accelerator is not None:
                    # simulated or real: torch stopped the program on the device
                    stop = known_failures.failure_on_the_device(exc, self.failure.site, found)
                    found.extend([stop] if stop is not None else [])
        except Exception as internal:  # noqa: BLE001 - the program's own outcome must win
            self.record.add_internal_error("checking the run", internal)
            found = list(self.record.immediate.values())
        self.findings = sorted((f for f in found if self._selected(f.code)), key=Finding.sort_key)

    def _undo(self) -> None:
        while self._active:
            self._active.pop()()

    def _selected(self, code: str) -> bool:
        return matches(code, self.select) and not matches(code, self.ignore)

    def report(self) -> Report:
        """The findings and the inventories (transfers, syncs, loaders, ops by device)."""
        facts = checks.facts(self.record)
        verdict = None
        if self.failure is not None:
            facts["failed"] = self.failure.facts()
            verdict = self.failure.verdict()
        if self.record.internal_errors:
            facts["torchport_internal_errors"] = list(self.record.internal_errors)
        return Report(command="run", findings=list(self.findings), facts=facts, verdict=verdict)

    def __call__(self, func: F) -> F:
        @functools.wraps(func)
        def watched(*args: Any, **kwargs: Any) -> Any:
            with self:
                return func(*args, **kwargs)

        return watched  # type: ignore[return-value]


_ORIGINAL_SYNCHRONIZE: list[Callable[..., None]] = []


def _made_at(provenance: Provenance, tensor: torch.Tensor) -> Location | None:
    site = provenance.get(tensor)
    return None if site is None else site.location()


def _patch_synchronize(observer: Observer) -> None:
    """torch.cuda.synchronize is no torch function: wrap it to count it in the sync inventory."""
    original = torch.cuda.synchronize
    _ORIGINAL_SYNCHRONIZE.append(original)

    @functools.wraps(original)
    def synchronize(device: Any = None) -> None:
        observer.on_sync("torch.cuda.synchronize")
        original(device)

    torch.cuda.synchronize = synchronize


def _unpatch_synchronize() -> None:
    torch.cuda.synchronize = _ORIGINAL_SYNCHRONIZE.pop()


def _close(observer: Observer) -> None:
    with observer.unobserved():
        observer.deferred.settle(observer)
    observer.__exit__(None, None, None)
    observer.closed = True


_ORIGINAL_THREAD_START: list[Callable[[threading.Thread], None]] = []


def _patch_thread_start(observer: Observer) -> None:
    """Threads started from now on run their target under ``observer`` (see the module doc)."""
    original = threading.Thread.start
    _ORIGINAL_THREAD_START.append(original)

    @functools.wraps(original)
    def start(thread: threading.Thread) -> None:
        run = thread.run

        def observed_run() -> None:
            with observer:
                run()

        thread.run = observed_run  # type: ignore[method-assign]
        original(thread)

    threading.Thread.start = start  # type: ignore[method-assign, assignment]


def _unpatch_thread_start() -> None:
    threading.Thread.start = _ORIGINAL_THREAD_START.pop()  # type: ignore[method-assign, assignment]


_ORIGINAL_FROM_NUMPY: list[Callable[..., torch.Tensor]] = []


def _patch_from_numpy(observer: Observer) -> None:
    """from_numpy bypasses function modes; wrap it to learn where NumPy data enters."""
    original = torch.from_numpy
    _ORIGINAL_FROM_NUMPY.append(original)

    @functools.wraps(original)
    def from_numpy(array: Any) -> torch.Tensor:
        tensor = original(array)
        if observer.quiet:
            return tensor
        site = user_site("torch.from_numpy")
        if site is not None:
            observer.provenance.record(tensor, site)
            if tensor.dtype == torch.float64:
                observer.record.float64_origins[site] += 1
        return tensor

    torch.from_numpy = from_numpy  # type: ignore[assignment]


def _unpatch_from_numpy() -> None:
    torch.from_numpy = _ORIGINAL_FROM_NUMPY.pop()


_ORIGINAL_LOAD: list[Callable[..., Any]] = []


def _patch_load(observer: Observer) -> None:
    """torch.load is no torch function: wrap it to learn which line loaded a checkpoint."""
    original = torch.load
    _ORIGINAL_LOAD.append(original)

    @functools.wraps(original)
    def load(*args: Any, **kwargs: Any) -> Any:
        loaded = original(*args, **kwargs)
        if not observer.quiet:
            try:
                site = user_site("torch.load")
                if site is not None:
                    observer.provenance.record_tree(loaded, site)
            except Exception as internal:  # noqa: BLE001 - bookkeeping never fails the program
                observer.internal("noting a torch.load", internal)
        return loaded

    torch.load = load


def _unpatch_load() -> None:
    torch.load = _ORIGINAL_LOAD.pop()
