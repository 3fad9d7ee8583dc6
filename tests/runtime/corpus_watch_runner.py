"""Run corpus programs under ``torchport run`` in one interpreter and report torchport's failures.

Usage: python corpus_watch_runner.py ROOT MODE ENTRY...  (MODE: ``observe`` or a ``--simulate``
spec such as ``cuda``; ENTRY: a file under ROOT or ``-m:package.module``). Prints one JSON object:
entry -> {"exit": code, "internal": [...], "torchport_traceback": text or null}.

A program may fail on its own (a device bug that a real GPU would show too); torchport may not:
no internal error caught at its boundary, no "torchport could not explain this", and no
exception out of torchport's own code unless the simulation raised it as the GPU would.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import sys
import traceback
from pathlib import Path
from typing import Any

from torchport.runtime import watch
from torchport.runtime.program import run_program
from torchport.runtime.sites import is_torchport_file


def run_one(root: Path, mode: str, entry: str) -> dict[str, Any]:
    for name in [m for m in sys.modules if (root / m.split(".")[0]).is_dir()]:
        del sys.modules[name]
    watcher = watch(None if mode == "observe" else mode)
    caught: list[BaseException] = []
    original = traceback.TracebackException.from_exception

    def remember(exc: BaseException, *args: Any, **kwargs: Any) -> Any:
        caught.append(exc)
        return original(exc, *args, **kwargs)

    out, err = io.StringIO(), io.StringIO()
    traceback.TracebackException.from_exception = remember  # type: ignore[method-assign]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            if entry.startswith("-m:"):
                code = run_program(watcher, entry[3:], [])
            else:
                code = run_program(watcher, None, [str(root / entry)])
    finally:
        traceback.TracebackException.from_exception = original  # type: ignore[method-assign]
    problems = list(watcher.record.internal_errors)
    if "torchport could not explain this" in err.getvalue():
        problems.append("the explainer failed: " + err.getvalue()[-1500:])
    return {"exit": code, "internal": problems, "torchport_traceback": _ours(caught)}


# A torchport line that calls the program's op, loader or thread: an exception whose innermost
# Python frame is such a line was raised in C++ below it (torch's error, not torchport's).
_CALLS_THROUGH = re.compile(r"\b(func|original|fetch|take|run|create|grouping)\(")


def _ours(caught: list[BaseException]) -> str | None:
    """The traceback of an exception raised by torchport's own code, if the program got one."""
    for exc in caught:
        frames = traceback.extract_tb(exc.__traceback__)
        if not frames or not is_torchport_file(frames[-1].filename):
            continue
        if getattr(exc, "_torchport_simulated", False):
            continue  # the error a real GPU raises, raised by the simulation on purpose
        if _CALLS_THROUGH.search(frames[-1].line or ""):
            continue
        return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-3000:]
    return None


def main() -> None:
    root, mode, entries = Path(sys.argv[1]).resolve(), sys.argv[2], sys.argv[3:]
    os.chdir(root)  # `-m` entries are found from the working directory, as python -m does
    results = {entry: run_one(root, mode, entry) for entry in entries}
    print(json.dumps(results))


if __name__ == "__main__":
    main()
