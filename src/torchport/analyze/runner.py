"""Check (and optionally fix) one file; the unit of work that ``-j N`` spreads over processes."""

from __future__ import annotations

import ast
import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from torchport.analyze import engine, sources
from torchport.analyze.checks import DETECTORS
from torchport.analyze.fixer import WriteRefused, safe_write, unified_diff
from torchport.config import Config
from torchport.findings import Finding, Location
from torchport.rules.device import UnparsableFile


@dataclass(frozen=True)
class Options:
    """How files are checked: the configuration and what to do with fixes."""

    config: Config
    fix: bool = False
    unsafe: bool = False
    diff: bool = False
    roots: tuple[Path, ...] = ()  # fixes are written only inside these folders

    @cached_property
    def codes(self) -> frozenset[str]:
        """The rules enabled for every file (without per-file-ignores, for any file)."""
        return frozenset(c for c in DETECTORS if self.config.enabled(c))


@dataclass
class FileResult:
    """The outcome of checking one file."""

    path: str
    findings: list[Finding] = field(default_factory=list)
    applied: list[Finding] = field(default_factory=list)
    diff: str = ""
    empty: bool = False
    problem: str | None = None  # not checked, or fixes not written: exit code 1 at least


def check_file(path: Path, options: Options) -> FileResult:
    """Findings for one file; with ``fix``/``diff``, the fixes too. Never raises for bad input."""
    with _no_cycle_collection():
        return _check_file(path, options)


@contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Pause the cyclic garbage collector while one file is parsed and analysed.

    A syntax tree is tens of thousands of objects made at once, none of them garbage: the
    collector would scan them again and again (a fifth of `check`'s time). What one file
    leaves behind is collected when the collector runs again after it.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _check_file(path: Path, options: Options) -> FileResult:
    shown = display(path)
    result = FileResult(shown)
    try:
        source = sources.read(path)
    except sources.BadFile as exc:
        return _unparsable(result, options, str(exc))
    if source is None:
        result.empty = True
        return result
    if engine.file_noqa(source.python):
        return result
    # without per-file-ignores the selection does not depend on the path (which is costly to
    # resolve once per rule and file)
    if options.config.per_file_ignores:
        codes = frozenset(c for c in options.codes if options.config.enabled(c, shown))
    else:
        codes = options.codes
    try:
        tree = ast.parse(source.python)
    except SyntaxError as exc:
        where = source.position(shown, exc.lineno or 0)
        return _unparsable(result, options, f"syntax error: {exc.msg}", where)
    except (ValueError, RecursionError, MemoryError) as exc:
        return _unparsable(result, options, f"cannot parse: {exc or type(exc).__name__}")
    selected = codes.__contains__
    try:
        if options.fix or options.diff:
            _fix(source, selected, options, result)
        else:
            result.findings = engine.analyze(source.python, shown, selected, tree)
    except RecursionError:
        return _unparsable(result, options, "too deeply nested to analyse")
    result.findings = [source.locate(f) for f in result.findings]
    result.applied = [source.locate(f) for f in result.applied]
    return result


def not_checked(path: Path, why: str, options: Options) -> FileResult:
    """The result for a path that could not even be listed or read (one line, TP100)."""
    return _unparsable(FileResult(display(path)), options, why)


def _fix(
    source: sources.Source, selected: engine.Selected, options: Options, result: FileResult
) -> None:
    outcome = engine.fix(source.python, result.path, selected, options.unsafe)
    result.findings, result.applied = outcome.remaining, outcome.applied
    result.problem = outcome.problem
    if outcome.text == source.python:
        return
    try:
        data = source.encoded(outcome.text)
        if options.diff:
            result.diff = unified_diff(result.path, source.python, outcome.text)
        else:
            safe_write(source.path, data, expected=source.data, within=options.roots)
    except (sources.BadFile, WriteRefused) as exc:
        _unwritten(source, selected, result, str(exc))
    except OSError as exc:
        _unwritten(source, selected, result, f"could not write the fixes: {exc.strerror or exc}")


def _unwritten(
    source: sources.Source, selected: engine.Selected, result: FileResult, why: str
) -> None:
    """The fixes did not reach the file: report its findings as they are on disk."""
    result.problem, result.applied = why, []
    result.findings = engine.analyze(source.python, result.path, selected)


def _unparsable(
    result: FileResult, options: Options, why: str, where: Location | None = None
) -> FileResult:
    result.problem, result.applied, result.diff = why, [], ""
    result.findings = []
    if options.config.enabled(UnparsableFile.code, result.path):
        loc = where or Location(result.path, 0)
        result.findings = [
            UnparsableFile.finding(f"{result.path} was not checked: {why}", loc, reason=why)
        ]
    return result


def display(path: Path) -> str:
    """``path`` relative to the working folder when it is inside it (as users typed it)."""
    try:
        return path.absolute().relative_to(Path.cwd()).as_posix()
    except ValueError:
        return str(path)
