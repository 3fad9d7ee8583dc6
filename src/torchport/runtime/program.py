"""Run a user's program the way ``python SCRIPT`` / ``python -m MODULE`` would, under a watch.

Exceptions are printed as Python prints them, without torchport's and runpy's frames, and turn
into the exit code Python would give (1, SystemExit's code, 130 for Ctrl-C).
"""

from __future__ import annotations

import os
import runpy
import sys
import traceback

from torchport.errors import EXIT_INTERRUPTED
from torchport.runtime.sites import _SKIPPED_DIRS, ignore_file
from torchport.runtime.watch import watch

_TORCHPORT_DIR = next(d for d in _SKIPPED_DIRS if d.rstrip(os.sep).endswith("torchport"))
_RUNPY = os.path.abspath(runpy.__file__)


def run_program(watcher: watch, module: str | None, program: list[str]) -> int:
    """Run ``program`` (SCRIPT ARGS, or ARGS when ``module`` is given) and return its exit code."""
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    if saved_argv:
        ignore_file(saved_argv[0])  # the launcher sits below the program on every stack
    try:
        if module is not None:
            sys.argv = [module, *program]
            sys.path.insert(0, os.getcwd())
            with watcher:
                runpy.run_module(module, run_name="__main__", alter_sys=True)
        else:
            script = program[0]
            sys.argv = list(program)
            sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
            with watcher:
                runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        return _exit_code(exc)
    except KeyboardInterrupt as exc:
        _print_exception(exc)
        return EXIT_INTERRUPTED
    except BaseException as exc:  # noqa: BLE001 - the program's own error, shown as Python would
        _print_exception(exc)
        return 1
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    return 0


def _exit_code(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=sys.stderr)
    return 1


def _print_exception(exc: BaseException) -> None:
    sys.stdout.flush()
    report = traceback.TracebackException.from_exception(exc)
    _trim(report, set())
    sys.stderr.write("".join(report.format()))
    sys.stderr.flush()


def _trim(report: traceback.TracebackException, seen: set[int]) -> None:
    """Drop torchport's and runpy's frames, in this exception and the ones it chains to."""
    if id(report) in seen:
        return
    seen.add(id(report))
    kept = [
        frame
        for frame in report.stack
        if not os.path.abspath(frame.filename).startswith(_TORCHPORT_DIR)
        and os.path.abspath(frame.filename) != _RUNPY
        and frame.filename != "<frozen runpy>"
    ]
    report.stack = traceback.StackSummary.from_list(kept)
    for chained in (report.__cause__, report.__context__):
        if chained is not None:
            _trim(chained, seen)
