"""How an observed run ended when it did not end well: the error, and the user's line it left.

A report that says "No findings" over a program that crashed misleads: the findings only cover
what ran before the crash. The watch keeps the program's exception untouched (it propagates as
it would under ``python``) and the report states the failure with its type, message and line.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from torchport.runtime.sites import Site, is_user_file

_MESSAGE_CHARS = 300
# Frames that mean the error came out of the autograd engine, i.e. from backward().
_BACKWARD_FRAMES = {"_engine_run_backward", "run_backward"}


class StrictFindingError(RuntimeError):
    """Raised under ``--strict`` at the first error-level finding."""


@dataclass(frozen=True)
class Failure:
    """The program's error (``ValueError: boom``), the user's line, and whether it was backward."""

    error: str
    site: Site | None
    in_backward: bool = False
    interrupted: bool = False

    def facts(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "error": self.error,
            "at": None if self.site is None else str(self.site),
        }
        if self.in_backward:
            out["during"] = "backward"
        if self.interrupted:
            out["interrupted"] = True
        return out

    def verdict(self) -> str:
        where = f" at {self.site}" if self.site is not None else ""
        during = " in backward()" if self.in_backward else ""
        if self.interrupted:
            return f"The run was interrupted{where}: the findings cover only what ran before."
        return (
            f"The run failed{where}{during} with {self.error}: the findings cover only what "
            "ran before the failure."
        )


def failure(exc: BaseException) -> Failure | None:
    """What to report for the exception that ended the block (None for a clean ``sys.exit``)."""
    if isinstance(exc, SystemExit):
        if exc.code is None or exc.code == 0:
            return None
        return Failure(f"SystemExit: {exc.code}", _user_site(exc.__traceback__))
    lines = str(exc).strip().splitlines()
    message = lines[0] if lines else ""
    if len(message) > _MESSAGE_CHARS:
        message = message[: _MESSAGE_CHARS - 1] + "…"
    error = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    tb = exc.__traceback__
    return Failure(
        error,
        _user_site(tb),
        in_backward=any(f.f_code.co_name in _BACKWARD_FRAMES for f, _ in traceback.walk_tb(tb)),
        interrupted=isinstance(exc, KeyboardInterrupt),
    )


def _user_site(tb: TracebackType | None) -> Site | None:
    """The innermost line of the user's code in the traceback."""
    site = None
    for frame, line in traceback.walk_tb(tb):
        if is_user_file(frame.f_code.co_filename):
            site = Site(frame.f_code.co_filename, line)
    return site
