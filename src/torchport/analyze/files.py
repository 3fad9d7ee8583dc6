"""Which files ``check`` looks at: recursion, default exclusions, ``.gitignore`` and ``--exclude``.

The ``.gitignore`` matcher implements the documented git rules that matter in practice:
comments, negation (``!``), directory-only patterns (trailing ``/``), anchoring (a ``/`` at
the start or in the middle), ``*``, ``?``, ``[...]`` and ``**``; the last matching pattern wins.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
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


# A path component's pattern: a sequence of tokens, each ``STAR`` or a one-character test.
Token = Callable[[str], bool] | None
Segment = tuple[Token, ...]
STAR: Token = None
ANY_DEPTH = None  # a whole ``**`` component: zero or more components


@dataclass(frozen=True)
class Pattern:
    """One gitignore-style pattern, split into path components."""

    base: Path
    segments: tuple[Segment | None, ...]  # one per path component, ``ANY_DEPTH`` for ``**``
    negate: bool
    dir_only: bool

    def matches(self, path: Path, is_dir: bool) -> bool:
        if self.dir_only and not is_dir:
            return False
        try:
            rel = PurePosixPath(path.relative_to(self.base))
        except ValueError:
            return False
        return match_segments(self.segments, rel.parts)


def compile_pattern(line: str, base: Path) -> Pattern | None:
    """One gitignore line as a Pattern (None for blank lines and comments)."""
    text = line.rstrip("\n").rstrip(" ")
    if not text or text.startswith("#"):
        return None
    negate = text.startswith("!")
    if negate:
        text = text[1:]  # a leading ``\!`` or ``\#`` is an escaped literal, handled per name
    dir_only = text.endswith("/")
    text = text.rstrip("/")
    if not text:
        return None
    anchored = "/" in text  # a slash at the start or in the middle ties it to ``base``
    segments: list[Segment | None] = [] if anchored else [ANY_DEPTH]
    for part in (part for part in text.split("/") if part):
        if part != "**":
            segments.append(_segment(part))
        elif not segments or segments[-1] is not ANY_DEPTH:  # a/**/**/b is a/**/b
            segments.append(ANY_DEPTH)
    if segments[-1] is ANY_DEPTH:  # a trailing ``/**`` matches what is inside, not the folder
        segments.insert(-1, _segment("*"))
    return Pattern(base, tuple(segments), negate, dir_only)


def _segment(glob: str) -> Segment:
    tokens: list[Token] = []
    i = 0
    while i < len(glob):
        char, end = glob[i], _class_end(glob, i)
        if char == "*":
            if not tokens or tokens[-1] is not STAR:  # ``**`` inside a name is one ``*``
                tokens.append(STAR)
        elif char == "?":
            tokens.append(_any_char)
        elif end > 0:
            tokens.append(_char_class(glob[i + 1 : end]))
            i = end
        else:
            if char == "\\" and i + 1 < len(glob):
                i += 1
            tokens.append(glob[i].__eq__)
        i += 1
    return tuple(tokens)


def _class_end(glob: str, i: int) -> int:
    """The index of the ``]`` closing a ``[...]`` that starts at ``i``, or -1."""
    if glob[i] != "[":
        return -1
    j = i + 1
    if glob[j : j + 1] in ("!", "^") and j < len(glob):
        j += 1
    if glob[j : j + 1] == "]":  # a ``]`` right after the opening bracket is a literal
        j += 1
    return glob.find("]", j)


def _any_char(_char: str) -> bool:
    return True


def _char_class(inner: str) -> Callable[[str], bool]:
    negate = inner[:1] in ("!", "^")
    body = re.escape(inner[1:] if negate else inner).replace("\\-", "-")
    try:
        regex = re.compile(f"[{'^' if negate else ''}{body}]")
    except re.error:  # a reversed range such as [z-a] matches nothing, as in git
        return lambda _char: False
    return lambda char: regex.fullmatch(char) is not None


def match_name(tokens: Segment, name: str) -> bool:
    """Whether one path component matches, in O(len(tokens) * len(name)) steps.

    The classic wildcard walk: on a mismatch, go back to just after the last ``*`` and let it
    swallow one more character. Every token other than ``*`` matches exactly one character.
    """
    t = n = 0
    star, resume = -1, 0
    while n < len(name):
        token = tokens[t] if t < len(tokens) else _no_char
        if token is None:  # STAR
            star, resume = t, n
            t += 1
        elif token(name[n]):
            t, n = t + 1, n + 1
        elif star >= 0:
            t, resume = star + 1, resume + 1
            n = resume
        else:
            return False
    return all(token is STAR for token in tokens[t:])


def _no_char(_char: str) -> bool:
    return False


def match_segments(segments: Sequence[Segment | None], parts: Sequence[str]) -> bool:
    """Whether the path components ``parts`` match ``segments``.

    The set of pattern positions reachable so far is carried along the path (an NFA), so each
    (position, component) pair is tried at most once: no exponential backtracking on ``**``.
    """
    states = _closure(segments, {0})
    for part in parts:
        advanced = set()
        for i in states:
            segment = segments[i] if i < len(segments) else ()
            if segment is ANY_DEPTH:
                advanced.add(i)
            elif i < len(segments) and match_name(segment, part):
                advanced.add(i + 1)
        states = _closure(segments, advanced)
        if not states:
            return False
    return len(segments) in states


def _closure(segments: Sequence[Segment | None], states: set[int]) -> set[int]:
    """``states`` plus the positions reached by letting each ``**`` match no component."""
    out = set(states)
    for start in states:
        i = start
        while i < len(segments) and segments[i] is ANY_DEPTH:
            i += 1
            out.add(i)
    return out


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
    paths: Iterable[Path],
    exclude: list[Pattern],
    gitignore: bool = True,
    problems: list[tuple[Path, str]] | None = None,
) -> Iterator[Path]:
    """Python files and notebooks under ``paths``, in a stable order, each once.

    A folder that cannot be listed is added to ``problems`` (with why) instead of vanishing.
    """
    seen: set[Path] = set()
    unreadable = problems if problems is not None else []
    for given in paths:
        root = given.absolute()
        if root.is_file() or not root.exists():
            if not ignored(exclude, root, False) and root not in seen:
                seen.add(root)
                yield root
            continue
        inherited = _inherited(root) if gitignore else []
        for found in _walk(root, [*exclude, *inherited], gitignore, unreadable):
            if found not in seen:
                seen.add(found)
                yield found


def _walk(
    folder: Path, patterns: list[Pattern], gitignore: bool, problems: list[tuple[Path, str]]
) -> Iterator[Path]:
    if gitignore:
        patterns = [*patterns, *read_patterns(folder)]
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as exc:
        problems.append((folder, f"cannot read folder: {exc.strerror or exc}"))
        return
    for entry in entries:
        path = Path(entry.path)
        is_dir = entry.is_dir(follow_symlinks=False)
        if ignored(patterns, path, is_dir):
            continue
        if is_dir:
            if entry.name not in SKIP_DIRS and not entry.name.endswith(".egg-info"):
                yield from _walk(path, patterns, gitignore, problems)
        elif entry.name.endswith(SUFFIXES) and entry.is_file():
            yield path
