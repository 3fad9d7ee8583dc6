"""``port --verify``: run the original and the port, compare, and repair what the run points at.

The program is copied into a temporary folder twice. The original runs there on the CPU; the
port runs under ``torchport run`` (on the real device where there is one, else under
``--simulate cuda``). When the port stops on a device mismatch whose explanation names a
creation site, that site is decided onto the device and the port runs again, a bounded number of
times, so that the diff shown is one that ran. The user's files change only with ``--write``.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from torchport.errors import UsageError
from torchport.findings import Finding, Location
from torchport.port.core import PortResult, port_sources
from torchport.port.options import PortOptions
from torchport.rules.device import PortNotVerified

SKIPPED = frozenset({".git", ".hg", ".venv", "venv", "env", "__pycache__", "node_modules", ".tox"})
MAX_COPY_BYTES = 512 * 2**20
CREATED_AT = re.compile(r"created at (?P<path>\S+?):(?P<line>\d+) by (?P<call>[\w.]+)")
NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


@dataclass(frozen=True)
class VerifySettings:
    """``timeout``: seconds for each run; ``tolerance``: relative, for numbers in the output
    (None: exact under simulation, 2e-2 on a real GPU); ``repairs``: re-ports at most."""

    entry: str | None = None
    args: tuple[str, ...] = ()
    timeout: float = 600.0
    tolerance: float | None = None
    repairs: int = 3


@dataclass
class Run:
    """One run of the original or of the port."""

    label: str
    code: int | None  # None: stopped at the time limit
    seconds: float
    stdout: str
    stderr: str
    findings: list[dict[str, object]] = field(default_factory=list)

    @property
    def finished(self) -> bool:
        return self.code == 0

    @property
    def last_line(self) -> str:
        lines = [line for line in self.stdout.splitlines() if line.strip()]
        return lines[-1].strip() if lines else ""

    def outcome(self) -> str:
        if self.code is None:
            return f"stopped after {self.seconds:.0f} s (the time limit)"
        if self.code != 0:
            error = _last_error(self.stderr)
            return f"failed (exit {self.code}){': ' + error if error else ''}"
        return f"ran to the end in {self.seconds:.1f} s"


# Words that mean a program computes differently on CUDA than on the CPU on purpose.
MIXED_PRECISION = ("autocast", "GradScaler")


@dataclass
class Verdict:
    original: Run
    ported: Run
    device: str
    tolerance: float
    agree: bool
    difference: str
    repaired: list[str] = field(default_factory=list)
    mixed_precision: bool = False  # autocast or GradScaler: on where CUDA is, by design

    @property
    def ok(self) -> bool:
        return self.original.finished and self.ported.finished and self.agree

    def lines(self) -> list[str]:
        original, ported = self.original, self.ported
        out = [
            f"original on the CPU: {original.outcome()}; last line: {original.last_line!r}",
            f"port on {self.device}: {ported.outcome()}; last line: {ported.last_line!r}",
        ]
        if self.original.finished and self.ported.finished:
            out.append(
                f"results {'agree' if self.agree else 'differ'}: {self.difference} "
                f"(tolerance {self.tolerance:g}, relative)"
            )
        out += [f"repaired by running it: {r}" for r in self.repaired]
        return out


def verify(
    paths: list[str], results: list[PortResult], options: PortOptions, settings: VerifySettings
) -> tuple[list[PortResult], Verdict]:
    """The port of ``paths`` after it has run (and been repaired), and what the runs showed."""
    root = _root(paths)
    entry = _entry(root, results, settings.entry)
    gpu = _has_gpu()
    device = "the GPU" if gpu else "a simulated CUDA device (no GPU here)"
    tolerance = settings.tolerance if settings.tolerance is not None else (2e-2 if gpu else 1e-6)
    with tempfile.TemporaryDirectory(prefix="torchport-verify-") as folder:
        work = Path(folder)
        original_root, ported_root = work / "original", work / "ported"
        _copy(root, original_root)
        _copy(root, ported_root)
        relative = entry.relative_to(root)
        original = _run_original(original_root, relative, settings)
        repaired: list[str] = []
        while True:
            _write(ported_root, root, results)
            ported = _run_port(ported_root, relative, settings, gpu, work / "report.json")
            sites = [] if ported.finished else _sites(ported, ported_root, root)
            if not sites or len(repaired) >= settings.repairs:
                break
            fixed = _repair(results, sites, options)
            if fixed is None:
                break
            results = fixed
            repaired += [f"{path}:{line} ({call})" for path, line, call in sites]
    agree, difference = _compare(original, ported, tolerance)
    mixed = any(word in r.after for r in results for word in MIXED_PRECISION)
    verdict = Verdict(original, ported, device, tolerance, agree, difference, repaired, mixed)
    return results, verdict


def findings(verdict: Verdict, entry_path: str) -> list[Finding]:
    """A verdict that is not a clean pass, as an error finding on the entry point."""
    if verdict.ok:
        return []
    if not verdict.original.finished:
        problem = f"the original did not run on the CPU: {verdict.original.outcome()}"
    elif not verdict.ported.finished:
        problem = f"the port did not run on {verdict.device}: {verdict.ported.outcome()}"
    else:
        problem = f"the port's results differ from the original's: {verdict.difference}"
        if verdict.mixed_precision:
            problem += (
                "; the program computes in lower precision (autocast, GradScaler) where CUDA "
                "is, so its results differ there by design: give a --tolerance that allows it"
            )
    return [PortNotVerified.finding(problem, Location(entry_path))]


# -- the workspace ------------------------------------------------------------------------------


def _root(paths: list[str]) -> Path:
    resolved = [Path(p).resolve() for p in paths]
    folders = [p if p.is_dir() else p.parent for p in resolved]
    return Path(os.path.commonpath([str(f) for f in folders]))


def _entry(root: Path, results: list[PortResult], named: str | None) -> Path:
    """The script the runs start: the one named, the only file, or the only ``__main__``."""
    if named is not None:
        entry = Path(named).resolve()
        if not entry.is_file():
            raise UsageError(f"--entry {named}: no such file")
        return entry
    if len(results) == 1:
        return Path(results[0].path).resolve()
    mains = [Path(r.path).resolve() for r in results if r.entry_point]
    if len(mains) != 1:
        found = ", ".join(str(m.relative_to(root)) for m in mains) or "none"
        raise UsageError(
            f"--verify needs one script to run; entry points found: {found} (name it with --entry)"
        )
    return mains[0]


def _copy(source: Path, target: Path) -> None:
    total = 0
    for path in _walk(source):
        total += path.stat().st_size
        if total > MAX_COPY_BYTES:
            raise UsageError(
                f"{source}: over {MAX_COPY_BYTES // 2**20} MiB to copy for --verify; point it at "
                "a smaller folder"
            )
    shutil.copytree(source, target, ignore=_ignored, symlinks=True)


def _walk(folder: Path) -> Iterable[Path]:
    for item in folder.iterdir():
        if item.is_symlink():
            continue
        if item.is_dir():
            if item.name not in SKIPPED and not item.name.startswith("."):
                yield from _walk(item)
        elif item.is_file():
            yield item


def _ignored(folder: str, names: list[str]) -> set[str]:
    return {n for n in names if n in SKIPPED or (n.startswith(".") and Path(folder, n).is_dir())}


def _write(ported_root: Path, root: Path, results: list[PortResult]) -> None:
    for result in results:
        relative = Path(result.path).resolve().relative_to(root)
        (ported_root / relative).write_text(result.after, encoding="utf-8")


# -- running ------------------------------------------------------------------------------------


def _has_gpu() -> bool:
    probe = "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"
    try:
        done = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, timeout=120, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def _command(root: Path, entry: Path) -> list[str]:
    """``script.py`` or, for a module of a package, ``-m package.module``."""
    from torchport.analyze.flow.program import module_name

    known = [str(p) for p in root.rglob("__init__.py")]
    name, _ = module_name(str(entry), known)
    return ["-m", name] if "." in name else [str(entry)]


def _where(root: Path, entry: Path) -> Path:
    """The folder the run starts in: the script's, or above its package."""
    from torchport.analyze.flow.program import module_name

    known = [str(p) for p in root.rglob("__init__.py")]
    name, _ = module_name(str(entry), known)
    folder = entry.parent
    for _ in range(name.count(".")):
        folder = folder.parent
    return folder


def _run_original(original_root: Path, relative: Path, settings: VerifySettings) -> Run:
    entry = original_root / relative
    command = [sys.executable, *_command(original_root, entry), *settings.args]
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")  # the reference runs on the CPU
    return _execute("original", command, _where(original_root, entry), env, settings.timeout)


def _run_port(
    ported_root: Path, relative: Path, settings: VerifySettings, gpu: bool, report: Path
) -> Run:
    entry = ported_root / relative
    command = [sys.executable, "-m", "torchport", "run", "--report", str(report), "--force-report"]
    command += ["--output-format", "json", "--exit-zero"]
    if not gpu:
        command += ["--simulate", "cuda"]
    command += [*_command(ported_root, entry), *settings.args]
    report.unlink(missing_ok=True)
    run = _execute("port", command, _where(ported_root, entry), dict(os.environ), settings.timeout)
    if report.is_file():
        try:
            run.findings = list(json.loads(report.read_text(encoding="utf-8")).get("findings", []))
        except (OSError, ValueError):
            run.findings = []
    return run


def _execute(label: str, command: list[str], cwd: Path, env: dict[str, str], timeout: float) -> Run:
    start = time.monotonic()
    try:
        done = subprocess.run(
            command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired as stopped:
        out = stopped.stdout.decode() if isinstance(stopped.stdout, bytes) else stopped.stdout or ""
        err = stopped.stderr.decode() if isinstance(stopped.stderr, bytes) else stopped.stderr or ""
        return Run(label, None, time.monotonic() - start, out, err)
    return Run(label, done.returncode, time.monotonic() - start, done.stdout, done.stderr)


def _last_error(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    errors = [
        line for line in lines if re.match(r"^\w+(\.\w+)*(Error|Exception|Interrupt)\b", line)
    ]
    return (errors[-1] if errors else (lines[-1] if lines else ""))[:200]


# -- repairing and comparing --------------------------------------------------------------------


def _sites(run: Run, ported_root: Path, root: Path) -> list[tuple[str, int, str]]:
    """Creation sites in the program that the run's device mismatches point at."""
    found: list[tuple[str, int, str]] = []
    texts = [str(f.get("message", "")) for f in run.findings if f.get("code") == "TP150"]
    texts.append(run.stderr)
    for text in texts:
        for match in CREATED_AT.finditer(text):
            path = Path(match["path"])
            if not path.is_absolute():
                continue
            try:
                relative = path.resolve().relative_to(ported_root.resolve())
            except ValueError:
                continue
            site = (str(root / relative), int(match["line"]), match["call"])
            if site not in found:
                found.append(site)
    return found


def _repair(
    results: list[PortResult], sites: list[tuple[str, int, str]], options: PortOptions
) -> list[PortResult] | None:
    """The port again, with the named creation sites decided onto the device."""
    by_path = {str(Path(r.path).resolve()): r for r in results}
    force = {(r.path, line, call) for p, line, call in sites if (r := by_path.get(p)) is not None}
    if not force:
        return None
    again = port_sources([(r.path, r.after) for r in results], options, force=force)
    if all(a.after == r.after for a, r in zip(again, results, strict=True)):
        return None
    return [
        PortResult(r.path, r.before, a.after, r.notes, entry_point=r.entry_point)
        for a, r in zip(again, results, strict=True)
    ]


def _compare(original: Run, ported: Run, tolerance: float) -> tuple[bool, str]:
    """Whether the last printed lines say the same, numbers within ``tolerance`` (relative)."""
    a, b = original.last_line, ported.last_line
    if not (original.finished and ported.finished):
        return False, "not compared"
    words_a, words_b = NUMBER.sub("#", a), NUMBER.sub("#", b)
    numbers_a = [float(n) for n in NUMBER.findall(a)]
    numbers_b = [float(n) for n in NUMBER.findall(b)]
    if words_a != words_b or len(numbers_a) != len(numbers_b):
        return False, f"{a!r} against {b!r}"
    worst = 0.0
    for x, y in zip(numbers_a, numbers_b, strict=True):
        if math.isnan(x) and math.isnan(y):
            continue
        scale = max(abs(x), abs(y), 1e-12)
        worst = max(worst, abs(x - y) / scale)
    if not numbers_a:
        return a == b, "the same last line" if a == b else f"{a!r} against {b!r}"
    return worst <= tolerance, f"largest relative difference {worst:.2g}"
