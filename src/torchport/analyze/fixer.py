"""Apply a Finding's edits to source text, and write files safely.

Shared by ``check --fix`` and ``port``: edits are applied from the end of the file backwards,
overlapping edits are dropped (the next run picks them up), writes are atomic (temp file in the
same folder + rename) and refuse to overwrite a file that changed since it was read.
Positions: lines are 1-based, columns are 0-based *character* offsets into the line
(``ast`` gives UTF-8 byte offsets: convert with :func:`char_column`).
"""

from __future__ import annotations

import difflib
import os
import re
import tempfile
from collections.abc import Iterable
from pathlib import Path

from torchport.errors import TorchportError
from torchport.findings import Edit


class FileChangedError(TorchportError):
    """The file on disk is no longer the text the fixes were computed from."""


def char_column(line_text: str, byte_offset: int) -> int:
    """Convert an ``ast`` UTF-8 byte column into a character column."""
    return len(line_text.encode("utf-8")[:byte_offset].decode("utf-8", errors="replace"))


def _offsets(source: str) -> list[int]:
    starts = [0]
    # Only the line ends ``ast`` counts (str.splitlines also breaks at form feeds and more).
    for line in re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", source):
        starts.append(starts[-1] + len(line))
    return starts


def apply_edits(source: str, edits: Iterable[Edit]) -> tuple[str, list[Edit]]:
    """The source with ``edits`` applied, and the edits that were applied.

    Edits that overlap an earlier-applied one are skipped, never merged.
    """
    starts = _offsets(source)

    def pos(line: int, column: int) -> int:
        return starts[min(max(line, 1), len(starts)) - 1] + column

    spans = sorted(
        ((pos(e.line, e.column), pos(e.end_line, e.end_column), e) for e in edits),
        key=lambda s: (s[0], s[1]),
    )
    applied: list[tuple[int, int, Edit]] = []
    last_end = -1
    for start, end, edit in spans:
        # Two insertions at the same point are fine; anything else that overlaps is not.
        if start < last_end or (applied and start == applied[-1][0] == end and start < last_end):
            continue
        applied.append((start, end, edit))
        last_end = max(last_end, end)
    out = source
    for start, end, edit in reversed(applied):
        out = out[:start] + edit.content + out[end:]
    return out, [a[2] for a in applied]


def unified_diff(path: str, before: str, after: str) -> str:
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=f"a/{path.lstrip('/')}",
            tofile=f"b/{path.lstrip('/')}",
        )
    )


def atomic_write(path: Path, text: str, expected: str | None = None) -> None:
    """Replace ``path`` with ``text`` atomically, keeping its permissions.

    With ``expected``, refuse (FileChangedError) when the file no longer holds that text.
    """
    if expected is not None:
        current = path.read_bytes().decode("utf-8")
        if current != expected:
            raise FileChangedError(f"{path}: changed on disk while being fixed; left alone")
    mode = path.stat().st_mode & 0o7777 if path.exists() else 0o644
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
