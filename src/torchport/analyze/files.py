"""Which files ``check`` looks at: recursion, default exclusions, ``.gitignore`` and ``--exclude``.

The ``.gitignore`` matcher implements the documented git rules that matter in practice:
comments, negation (``!``), directory-only patterns (trailing ``/``), anchoring (a ``/`` at
the start or in the middle), ``*``, ``?``, ``[...]`` and ``**``; the last matching pattern wins.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

SUFFIXES = (".py", ".ipynb")
SKIP_DIRS = frozenset(
    [
        ".git",
        ".hg",
        ".svn",
        "__pycache__",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        "node_modules",
        "site-packages",
        ".ipynb_checkpoints",
        ".eggs",
    ]
)


@dataclass(frozen=True)
class Pattern:
    base: Path
    regex: re.Pattern[str]
    negate: bool
    dir_only: bool

    def matches(self, path: Path, is_dir: bool) -> bool:
        if self.dir_only and not is_dir:
            return False
        try:
            rel = PurePosixPath(path.relative_to(self.base)).as_posix()
        except ValueError:
            return False
        return self.regex.match(rel) is not None


def compile_pattern(line: str, base: Path) -> Pattern | None:
    """One gitignore line as a Pattern (None for blank lines and comments)."""
    text = line.rstrip("\n").rstrip(" ")
    if not text or text.startswith("#"):
        return None
    negate = text.startswith("!")
    if negate or text.startswith("\\"):
        text = text[1:]
    dir_only = text.endswith("/")
    text = text.rstrip("/")
    if not text:
        return None
    anchored = "/" in text
    text = text.lstrip("/")
    body = _translate(text)
    regex = ("^" if anchored else "^(?:.*/)?") + body + "$"
    return Pattern(base, re.compile(regex), negate, dir_only)


def _translate(glob: str) -> str:
    out, i = [], 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        elif glob[i] == "[" and "]" in glob[i + 1 :]:
            end = glob.index("]", i + 1)
            inner = glob[i + 1 : end].replace("\\", "\\\\")
            out.append("[" + ("^" + inner[1:] if inner.startswith("!") else inner) + "]")
            i = end + 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return "".join(out)


def read_patterns(folder: Path) -> list[Pattern]:
    try:
        text = (folder / ".gitignore").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [p for p in (compile_pattern(line, folder) for line in text.splitlines()) if p]


def ignored(patterns: Iterable[Pattern], path: Path, is_dir: bool) -> bool:
    verdict = False
    for pattern in patterns:
        if pattern.matches(path, is_dir):
            verdict = not pattern.negate
    return verdict


def _inherited(root: Path) -> list[Pattern]:
    """``.gitignore`` files above ``root``, up to the repository's top (a folder with .git)."""
    chain: list[Path] = []
    for folder in root.parents:
        chain.append(folder)
        if (folder / ".git").exists():
            break
    else:
        return []
    return [p for folder in reversed(chain) for p in read_patterns(folder)]


def discover(
    paths: Iterable[Path], exclude: list[Pattern], gitignore: bool = True
) -> Iterator[Path]:
    """Python files and notebooks under ``paths``, in a stable order, each once."""
    seen: set[Path] = set()
    for given in paths:
        root = given.absolute()
        if root.is_file() or not root.exists():
            if not ignored(exclude, root, False) and root not in seen:
                seen.add(root)
                yield root
            continue
        inherited = _inherited(root) if gitignore else []
        for found in _walk(root, [*exclude, *inherited], gitignore):
            if found not in seen:
                seen.add(found)
                yield found


def _walk(folder: Path, patterns: list[Pattern], gitignore: bool) -> Iterator[Path]:
    if gitignore:
        patterns = [*patterns, *read_patterns(folder)]
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        path = Path(entry.path)
        is_dir = entry.is_dir(follow_symlinks=False)
        if ignored(patterns, path, is_dir):
            continue
        if is_dir:
            if entry.name not in SKIP_DIRS and not entry.name.endswith(".egg-info"):
                yield from _walk(path, patterns, gitignore)
        elif entry.name.endswith(SUFFIXES) and entry.is_file():
            yield path
