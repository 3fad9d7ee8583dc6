"""The file of ``torchport run --report PATH``: checked before the program runs, written atomically.

The path is made absolute against the directory ``run`` starts in, so a program that changes
directory does not move it. Before the program starts it must be writable, and an existing file
must be a torchport report (or empty): anything else is kept unless ``--force-report`` is given,
so that ``--report train.py`` cannot replace a script. A torchport report is recognised by its
content: JSON and SARIF by their ``"tool"`` marker, text and GitHub annotations by a first line
that ``run`` writes into report files. The report is written to a temporary file beside the
target and renamed over it (through a symlink, to its target; a device such as ``/dev/null`` is
written in place).
"""

from __future__ import annotations

import io
import os
import re
import stat
from dataclasses import dataclass

from torchport._version import __version__
from torchport.errors import UsageError
from torchport.findings import Report
from torchport.report import render

TEXT_MARKER = "# torchport run report"
GITHUB_MARKER = "::debug::torchport run report"
_JSON_HEAD = re.compile(r'\A\s*\{\s*"tool":\s*"torchport"')
_SARIF_HEAD = re.compile(r'\A\s*\{\s*"\$schema":[^\n]*sarif[\s\S]*?"name":\s*"torchport"')
_HEAD_BYTES = 4096


@dataclass(frozen=True)
class ReportFile:
    """Where the report goes: ``shown`` as the user wrote it, ``path`` absolute and resolved."""

    shown: str
    path: str
    in_place: bool  # a device or a pipe: written as is, never replaced


def is_torchport_report(head: str) -> bool:
    """Whether ``head`` (the start of a file) is the start of a report torchport wrote."""
    first = head.split("\n", 1)[0].strip()
    return (
        first.startswith((TEXT_MARKER, GITHUB_MARKER))
        or bool(_JSON_HEAD.match(head))
        or bool(_SARIF_HEAD.match(head))
    )


def prepare(shown: str, force: bool) -> ReportFile:
    """Check that the report can go to ``shown``, before anything runs; UsageError if not."""
    path = os.path.realpath(os.path.abspath(shown))
    where = f"--report {shown}"
    if os.path.isdir(path):
        raise UsageError(f"torchport run: {where}: is a folder; give a file name")
    if os.path.exists(path):
        mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode):
            if not os.access(path, os.W_OK):
                raise UsageError(f"torchport run: {where}: not writable")
            return ReportFile(shown, path, in_place=True)
        _check_existing(path, where, force)
    _check_folder(os.path.dirname(path), where)
    return ReportFile(shown, path, in_place=False)


def _check_existing(path: str, where: str, force: bool) -> None:
    if not os.access(path, os.W_OK):
        raise UsageError(f"torchport run: {where}: the file is read-only; not overwriting it")
    if force:
        return
    try:
        with open(path, encoding="utf-8", errors="replace") as stream:
            head = stream.read(_HEAD_BYTES)
    except OSError as exc:
        raise UsageError(f"torchport run: {where}: cannot read it: {exc.strerror}") from None
    if head and not is_torchport_report(head):
        raise UsageError(
            f"torchport run: {where}: the file exists and is not a torchport report; not "
            "overwriting it (pass --force-report to overwrite it)"
        )


def _check_folder(folder: str, where: str) -> None:
    if not os.path.isdir(folder):
        raise UsageError(f"torchport run: {where}: no such folder: {folder}")
    # Only creating a file says for sure (permissions, read-only mounts, ACLs, quotas).
    probe = os.path.join(folder, f".torchport-report-check-{os.urandom(16).hex()}")
    try:
        os.close(os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except OSError as exc:
        raise UsageError(
            f"torchport run: {where}: cannot write in {folder}: {exc.strerror}"
        ) from None
    os.unlink(probe)


def marker(fmt: str, command: str) -> str:
    """The first line of a text or GitHub report file, by which a later run knows it."""
    if fmt == "text":
        return f"{TEXT_MARKER} ({command}, torchport {__version__})\n"
    if fmt == "github":
        return f"{GITHUB_MARKER} ({command}, torchport {__version__})\n"
    return ""


def write(target: ReportFile, report: Report, fmt: str) -> None:
    """Write ``report`` to ``target``; OSError if it cannot (the old file is then unchanged)."""
    buffer = io.StringIO()
    buffer.write(marker(fmt, report.command))
    render(report, fmt, buffer)
    data = buffer.getvalue().encode("utf-8")
    if target.in_place:
        with open(target.path, "wb") as stream:
            stream.write(data)
        return
    _replace(target.path, data)


def _replace(path: str, data: bytes) -> None:
    folder, name = os.path.split(path)
    temporary = os.path.join(folder, f".{name}.{os.urandom(16).hex()}.tmp")
    # 0o666 lets the umask decide a new file's mode, as open() would; an old file keeps its own.
    fd = os.open(temporary, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
    try:
        with os.fdopen(fd, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        if os.path.exists(path):
            os.chmod(temporary, stat.S_IMODE(os.stat(path).st_mode))
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
