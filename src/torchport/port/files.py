"""Port files and folders: read everything first, fail before writing anything, write atomically."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

import libcst as cst

from torchport.analyze.fixer import atomic_write, unified_diff
from torchport.errors import UsageError
from torchport.port.core import PortResult, port_sources
from torchport.port.options import PortOptions

SKIPPED_DIRS = frozenset({".git", ".venv", "venv", "__pycache__", "build", "dist", ".tox"})


def python_files(paths: Iterable[str]) -> list[Path]:
    """The ``.py`` files named by ``paths`` (folders recursed, hidden and venv folders skipped)."""
    files: list[Path] = []
    for name in paths:
        path = Path(name)
        if path.is_dir():
            files.extend(p for p in sorted(path.rglob("*.py")) if _wanted(p.relative_to(path)))
        elif path.is_file():
            files.append(path)
        else:
            raise UsageError(f"{name}: no such file or folder")
    return files


def _wanted(relative: Path) -> bool:
    folders = relative.parts[:-1]
    return not any(f in SKIPPED_DIRS or f.startswith(".") for f in folders)


def _read(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 text (byte {exc.start}); nothing was ported") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror}") from None


def _parse(path: Path, source: str) -> ast.Module:
    # The standard library names the mistake better than libcst's parser does.
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        where = f"{path}:{exc.lineno or 0}:{exc.offset or 0}"
        raise UsageError(f"{where}: syntax error: {exc.msg}; nothing was ported") from None
    try:
        cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        where = f"{path}:{exc.raw_line}:{exc.raw_column + 1}"
        raise UsageError(f"{where}: libcst cannot parse this file; nothing was ported") from None
    return tree


def port_paths(paths: Iterable[str], options: PortOptions) -> list[PortResult]:
    """Port every file; raises UsageError (and ports nothing) when any input is bad."""
    files = python_files(paths)
    if not files:
        raise UsageError("no Python files to port")
    sources = {path: _read(path) for path in files}
    for path, source in sources.items():
        _parse(path, source)
    # One program: a model class or a helper defined in one file is followed into the others.
    return port_sources([(str(p), sources[p]) for p in files], options)


def diff(results: Iterable[PortResult]) -> str:
    return "".join(unified_diff(r.path, r.before, r.after) for r in results if r.changed)


def write(results: Iterable[PortResult]) -> list[str]:
    """Apply the changed results atomically; the paths written."""
    written = []
    for result in results:
        if result.changed:
            atomic_write(Path(result.path), result.after, expected=result.before)
            written.append(result.path)
    return written
