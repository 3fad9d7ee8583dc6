"""Check (and optionally fix) one file; the unit of work that ``-j N`` spreads over processes."""

from __future__ import annotations

import ast
import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from torchport.analyze import engine, sources
from torchport.analyze.checks import DETECTORS
from torchport.analyze.fixer import FileChangedError, atomic_write, unified_diff
from torchport.config import Config
from torchport.findings import Finding, Location
from torchport.rules.device import UnparsableFile


@dataclass(frozen=True)
class Options:
    config: Config
    fix: bool = False
    unsafe: bool = False
    diff: bool = False


@dataclass
class FileResult:
    path: str
    findings: list[Finding] = field(default_factory=list)
    applied: list[Finding] = field(default_factory=list)
    diff: str = ""
    empty: bool = False
    problem: str | None = None  # could not check, or could not write the fix


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
    where = shown if options.config.per_file_ignores else None
    codes = {c for c in DETECTORS if options.config.enabled(c, where)}
    try:
        tree = ast.parse(source.python)
    except SyntaxError as exc:
        return _unparsable(result, options, f"syntax error: {exc.msg}", exc.lineno or 0)
    except (ValueError, RecursionError, MemoryError) as exc:
        return _unparsable(result, options, f"cannot parse: {exc}")
    selected = codes.__contains__
    try:
        if options.fix or options.diff:
            _fix(source, selected, options, result)
        else:
            result.findings = engine.analyze(source.python, shown, selected, tree)
    except RecursionError:
        result.problem = "too deeply nested to analyse; skipped"
        result.findings = []
    result.findings = [source.locate(f) for f in result.findings]
    result.applied = [source.locate(f) for f in result.applied]
    return result


def _fix(
    source: sources.Source, selected: engine.Selected, options: Options, result: FileResult
) -> None:
    outcome = engine.fix(source.python, result.path, selected, options.unsafe)
    result.findings, result.applied = outcome.remaining, outcome.applied
    result.problem = outcome.problem
    if outcome.text == source.python:
        return
    try:
        new_raw = source.written(outcome.text)
    except sources.BadFile as exc:
        result.problem, result.applied = str(exc), []
        return
    if options.diff:
        result.diff = unified_diff(result.path, source.python, outcome.text)
        return
    try:
        atomic_write(source.path, new_raw, expected=source.raw)
    except FileChangedError:
        result.problem, result.applied = "changed on disk while being fixed; left alone", []
    except (OSError, UnicodeDecodeError) as exc:
        result.problem, result.applied = f"could not write the fixes: {exc}", []


def _unparsable(result: FileResult, options: Options, why: str, line: int = 0) -> FileResult:
    result.problem = why
    if options.config.enabled(UnparsableFile.code, result.path):
        loc = Location(result.path, line)
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
