"""Apply a Finding's edits to source text, and write files safely.

Shared by ``check --fix`` and ``port``: edits are applied from the end of the file backwards,
overlapping edits are dropped (the next run picks them up), writes are atomic (temp file in the
same folder + rename), go through symbolic links, and refuse to overwrite a file that changed
since it was read, is read-only, or has other hard links.
Positions: lines are 1-based, columns are 0-based *character* offsets into the line
(``ast`` gives UTF-8 byte offsets: convert with :func:`char_column`).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

from torchport.errors import TorchportError
from torchport.findings import Edit


class WriteRefused(TorchportError):
    """A write that would lose something the user set up; the message says what (one line)."""


class FileChangedError(WriteRefused):
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
    import difflib  # only --diff needs it: `check` starts faster without

    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=f"a/{path.lstrip('/')}",
            tofile=f"b/{path.lstrip('/')}",
        )
    )


def write_roots(paths: Iterable[Path]) -> tuple[Path, ...]:
    """The folders writes must stay in: each given folder, and the folder of each given file."""
    return tuple((p.resolve() if p.is_dir() else p.absolute().parent.resolve()) for p in paths)


def safe_write(
    path: Path, data: bytes, expected: bytes | None = None, within: Sequence[Path] = ()
) -> Path:
    """Replace the file ``path`` names with ``data`` atomically; the path written.

    A symbolic link is written through: its target is replaced and the link stays. Refused
    (WriteRefused, nothing written) when the target lies outside the folders ``within``, is
    read-only, has other hard links (README: an atomic write would split them, an in-place one
    would not be atomic), or no longer holds ``expected``. The file keeps its mode (and, when
    run as root, its owner).
    """
    target = path.resolve()
    if within and not any(target.is_relative_to(root) for root in within):
        raise WriteRefused(f"resolves to {target}, outside the checked folders; not written")
    info = target.stat()
    if not info.st_mode & 0o222 or not os.access(target, os.W_OK):
        raise WriteRefused("read-only file; not written")
    if info.st_nlink > 1:
        raise WriteRefused(f"has {info.st_nlink} hard links; not written (it would split them)")
    if expected is not None and target.read_bytes() != expected:
        raise FileChangedError("changed on disk while being processed; left alone")
    import tempfile  # only writing fixes needs it (it imports random and shutil)

    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, stat.S_IMODE(info.st_mode))
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            os.chown(tmp, info.st_uid, info.st_gid)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
