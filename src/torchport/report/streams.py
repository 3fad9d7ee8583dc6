"""Writing to streams that cannot take every character, or that the user's program closed.

A finding may name a file or a GPU with characters the terminal's encoding lacks
(``PYTHONIOENCODING=ascii``): those are written as ``\\xe9`` escapes, never an error. A program
run under ``torchport run`` may close ``sys.stderr``; the report then goes to file descriptor 2,
which Python's own ``sys.stderr`` leaves open, and is dropped only when that is closed too.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import TextIO

_TOLERANT = frozenset({"backslashreplace", "replace", "namereplace", "xmlcharrefreplace", "ignore"})


@contextlib.contextmanager
def tolerant(stream: TextIO) -> Iterator[TextIO]:
    """``stream``, escaping what its encoding cannot represent; its error mode is restored after.

    The stream is reconfigured in place rather than wrapped, so that renderers still see the
    terminal it is (colours, width).
    """
    errors = getattr(stream, "errors", None)
    reconfigure = getattr(stream, "reconfigure", None)
    if errors in _TOLERANT or reconfigure is None or stream.closed:
        yield stream
        return
    reconfigure(errors="backslashreplace")
    try:
        yield stream
    finally:
        if not stream.closed:
            reconfigure(errors=errors)


@contextlib.contextmanager
def stderr_stream() -> Iterator[TextIO | None]:
    """``sys.stderr``; if the program closed it, a stream on file descriptor 2; else None."""
    stream = sys.stderr
    if stream is not None and not stream.closed:
        yield stream
        return
    try:
        fallback = open(  # noqa: SIM115 - closed below; closefd=False leaves fd 2 open
            2, "w", encoding="utf-8", errors="backslashreplace", closefd=False
        )
    except OSError:
        yield None  # no stderr at all: nowhere left to write to
        return
    try:
        yield fallback
    finally:
        with contextlib.suppress(OSError):
            fallback.close()


def flush(stream: TextIO | None) -> None:
    """Flush ``stream`` unless the program closed it (or it has gone away)."""
    if stream is None or stream.closed:
        return
    with contextlib.suppress(OSError, ValueError):  # a broken pipe is the program's business
        stream.flush()


def say(line: str) -> None:
    """One line of torchport's own on stderr; dropped only where no stderr is left."""
    with stderr_stream() as stream:
        if stream is None:
            return
        # A stderr that fails to write (a closed pipe) leaves nowhere to say so.
        with tolerant(stream), contextlib.suppress(OSError):
            stream.write(line + "\n")
            stream.flush()
