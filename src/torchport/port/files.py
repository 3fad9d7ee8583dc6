"""Port files and folders as robustly as ``check`` reads them.

Each file is read and decoded as ``check`` does (encodings, BOM, notebooks cell by cell), parsed
by Python first and measured for nesting depth before the port's analysis sees it (its
interpreter recurses with the expressions, and the ``--distributed`` rewrite uses libcst, whose
parser overflows the C stack on a few thousand nested operators), ported with the other files as
one program, and the result parsed again before it is shown or written. A file that cannot be
ported is skipped with one TP100 line and the rest is ported; nothing is written that does not
parse.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from torchport.analyze import sources
from torchport.analyze.fixer import FileChangedError, WriteRefused, safe_write, unified_diff
from torchport.errors import UsageError
from torchport.findings import Finding, Location
from torchport.port.core import PortResult, port_source, port_sources
from torchport.port.options import PortOptions
from torchport.rules.device import UnparsableFile

SKIPPED_DIRS = frozenset({".git", ".venv", "venv", "__pycache__", "build", "dist", ".tox"})
SUFFIXES = (".py", ".ipynb")
# Deeper than this (see ``nesting_depth``), libcst's recursive visitors run out of Python stack
# (at about 280 for nested calls) and its parser out of C stack (at a few thousand): measured
# on libcst 1.5 with the default recursion limit; the port's interpreter recurses about three
# frames a level. The installed torch package peaks at 96.
MAX_DEPTH = 200


def python_files(paths: Iterable[str]) -> list[Path]:
    """The ``.py`` files and notebooks named by ``paths`` (folders recursed, hidden and venv
    folders skipped)."""
    files: list[Path] = []
    for name in paths:
        path = Path(name)
        if path.is_dir():
            found = (p for p in sorted(path.rglob("*")) if p.suffix in SUFFIXES and p.is_file())
            files.extend(p for p in found if _wanted(p.relative_to(path)))
        elif path.is_file():
            files.append(path)
        else:
            raise UsageError(f"{name}: no such file or folder")
    return files


def _wanted(relative: Path) -> bool:
    folders = relative.parts[:-1]
    return not any(f in SKIPPED_DIRS or f.startswith(".") for f in folders)


@dataclass
class _Input:
    path: Path
    source: sources.Source | None = None  # None: empty, or could not be read
    tree: ast.Module | None = None
    problem: str | None = None
    where: Location | None = None


def port_paths(paths: Iterable[str], options: PortOptions) -> list[PortResult]:
    """One result per file; a file that cannot be ported is unchanged, with a TP100 note."""
    files = python_files(paths)
    if not files:
        raise UsageError("no Python files to port")
    inputs = [_load(path, options) for path in files]
    ported = _port_together(
        [i for i in inputs if i.source is not None and i.problem is None], options
    )
    return [ported.get(str(i.path)) or _port(i, options) for i in inputs]


def port_file(path: Path, options: PortOptions) -> PortResult:
    """One file as :func:`port_paths` ports it, alone."""
    return _port(_load(path, options), options)


def _port_together(inputs: list[_Input], options: PortOptions) -> dict[str, PortResult]:
    """The files as one program (a model class or a helper of one file is followed into the
    others); where that fails, each file is ported alone so that one bad file stops nothing."""
    try:
        results = port_sources(
            [(str(i.path), i.source.python) for i in inputs if i.source], options
        )
    except Exception:  # noqa: BLE001 - each file is then ported alone, and reports its own error
        return {}
    return {str(i.path): _checked(i, r) for i, r in zip(inputs, results, strict=True)}


def _load(path: Path, options: PortOptions) -> _Input:
    item = _Input(path)
    try:
        item.source = sources.read(path)
    except sources.BadFile as exc:
        item.problem = str(exc)
        return item
    if item.source is None:
        return item
    if options.distributed and item.source.notebook is not None:
        item.problem = "a notebook is not ported with --distributed (torchrun runs scripts)"
        return item
    try:
        item.tree = ast.parse(item.source.python)
    except SyntaxError as exc:
        item.problem = f"syntax error: {exc.msg}"
        item.where = item.source.position(str(path), exc.lineno or 0)
        return item
    except (ValueError, RecursionError, MemoryError) as exc:
        item.problem = f"cannot parse: {exc or type(exc).__name__}"
        return item
    depth = nesting_depth(item.tree)
    if depth > MAX_DEPTH:
        item.problem = f"nested too deeply to port safely (depth {depth}, limit {MAX_DEPTH})"
        item.tree = None
    return item


def _port(item: _Input, options: PortOptions) -> PortResult:
    shown = str(item.path)
    source = item.source
    if source is None or item.problem is not None:
        text = "" if source is None else source.python
        return _skipped(shown, text, item.problem, item.where)
    try:
        result = port_source(source.python, shown, options)
    except RecursionError:
        return _skipped(shown, source.python, "nested too deeply for the port")
    except Exception as exc:  # noqa: BLE001 - a bug in the port must not stop the other files
        why = f"internal error in port for {shown} ({type(exc).__name__}: {exc}); please report"
        return _skipped(shown, source.python, why, internal=True)
    return _checked(item, result)


def _checked(item: _Input, result: PortResult) -> PortResult:
    """``result`` if it parses and encodes as its file does; else the file, skipped."""
    shown = str(item.path)
    source = item.source
    assert source is not None
    if result.changed:
        try:
            ast.parse(result.after)
        except SyntaxError as exc:
            why = (
                f"internal error in port for {shown}: the ported text would not parse "
                f"({exc.msg}, line {exc.lineno}); please report"
            )
            return _skipped(shown, source.python, why, internal=True)
        try:
            source.encoded(result.after)
        except sources.BadFile as exc:
            return _skipped(shown, source.python, str(exc))
    result.notes = [source.locate(note) for note in result.notes]
    return result


def _skipped(
    path: str, text: str, why: str | None, where: Location | None = None, internal: bool = False
) -> PortResult:
    if why is None:  # an empty file: nothing to port, nothing to say
        return PortResult(path, text, text)
    note = UnparsableFile.finding(
        f"{path} was not ported: {why}", where or Location(path, 0), reason=why, internal=internal
    )
    return PortResult(path, text, text, [note])


def internal_errors(results: Iterable[PortResult]) -> list[Finding]:
    """The notes that report a failure of the port itself rather than of its input."""
    return [n for r in results for n in r.notes if n.details.get("internal")]


def nesting_depth(tree: ast.AST) -> int:
    """How deep libcst will nest ``tree``, measured without recursion.

    ``ast`` keeps ``a and b and c`` flat where libcst nests it pairwise, and libcst wraps call
    arguments, collection elements and subscripts in nodes of their own; both are counted.
    """
    deepest = 0
    stack: list[tuple[ast.AST, int]] = [(tree, 1)]
    wrapped = (ast.Call, ast.List, ast.Tuple, ast.Set, ast.Dict, ast.Subscript)
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if isinstance(node, ast.BoolOp):
            count = len(node.values)
            stack.extend((v, depth + max(count - i - 1, 1)) for i, v in enumerate(node.values))
            continue
        step = 2 if isinstance(node, wrapped) else 1
        stack.extend((child, depth + step) for child in ast.iter_child_nodes(node))
    return deepest


def diff(results: Iterable[PortResult]) -> str:
    return "".join(unified_diff(r.path, r.before, r.after) for r in results if r.changed)


def write(
    results: Iterable[PortResult], within: Sequence[Path] = ()
) -> tuple[list[str], list[str]]:
    """Apply the changed results atomically: the paths written, and one line per file that was
    not (changed on disk meanwhile, read-only, a link out of ``within``, hard-linked...)."""
    written: list[str] = []
    problems: list[str] = []
    for result in results:
        if not result.changed:
            continue
        path = Path(result.path)
        try:
            source = sources.read(path)
            if source is None or source.python != result.before:
                raise FileChangedError("changed on disk while being ported; left alone")
            safe_write(path, source.encoded(result.after), expected=source.data, within=within)
        except (sources.BadFile, WriteRefused) as exc:
            problems.append(f"{result.path}: {exc}")
        except OSError as exc:
            problems.append(f"{result.path}: could not write: {exc.strerror or exc}")
        else:
            written.append(result.path)
    return written, problems
