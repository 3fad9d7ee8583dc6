"""``torchport run [OPTIONS] SCRIPT [ARGS...]`` / ``torchport run -m MODULE [ARGS...]``.

Runs the program as ``python`` would (``__main__``, ``sys.argv``, its directory on ``sys.path``,
its exit code, stdout, stderr and tracebacks) under observation, then writes the report to
stderr (or ``--report FILE``), also when the program raises, exits or is interrupted. The exit
code is the program's; with ``--fail-on SEVERITY`` findings at or above it turn a clean exit
into 1.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from torchport.cli._common import add_output_options
from torchport.errors import EXIT_FINDINGS, EXIT_INTERRUPTED, UsageError, require_torch


def register(sub: Any) -> None:
    p = sub.add_parser(
        "run",
        help="run a script under observation (--simulate cuda pretends a GPU)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("-m", dest="module", metavar="MODULE", help="run a module, as python -m")
    p.add_argument(
        "--simulate",
        metavar="DEVICE",
        help="pretend an accelerator on this machine: cuda, cuda:N (N GPUs) or mps",
    )
    p.add_argument("--strict", action="store_true", help="raise at the first error finding")
    p.add_argument(
        "--check-finite",
        action="store_true",
        help="report the first op that produces inf/NaN (costs a check per op)",
    )
    p.add_argument("--select", metavar="CODES", help="comma-separated codes or prefixes")
    p.add_argument("--ignore", metavar="CODES", help="comma-separated codes or prefixes")
    p.add_argument("--report", metavar="FILE", help="write the report to FILE, not stderr")
    add_output_options(p)
    p.add_argument("program", nargs=argparse.REMAINDER, help="SCRIPT [ARGS...] or ARGS for -m")
    p.set_defaults(func=run)


def _codes(text: str | None, default: list[str]) -> list[str]:
    return [c.strip() for c in text.split(",") if c.strip()] if text else default


def run(args: argparse.Namespace) -> int:
    if args.module is None and not args.program:
        raise UsageError("torchport run: give a SCRIPT to run, or -m MODULE")
    if args.module is None and not os.path.isfile(args.program[0]):
        raise UsageError(f"torchport run: no such script: {args.program[0]}")
    require_torch("torchport run")
    from torchport.findings import Severity
    from torchport.report import render
    from torchport.runtime import watch
    from torchport.runtime.program import run_program

    watcher = watch(
        args.simulate,
        check_finite=args.check_finite,
        strict=args.strict,
        select=_codes(args.select, ["ALL"]),
        ignore=_codes(args.ignore, []),
    )
    code = EXIT_INTERRUPTED
    try:
        code = run_program(watcher, args.module, list(args.program))
    finally:
        report = watcher.report()
        _write(report, args.output_format, args.report, render)
    threshold = Severity.parse(args.fail_on) if args.fail_on else None
    if code == 0 and threshold is not None and not args.exit_zero and report.fails(threshold):
        return EXIT_FINDINGS
    return code


def _write(report: Any, fmt: str, path: str | None, render: Any) -> None:
    sys.stdout.flush()
    if path is None:
        render(report, fmt, sys.stderr)
        return
    try:
        with open(path, "w", encoding="utf-8") as stream:
            render(report, fmt, stream)
    except OSError as exc:
        raise UsageError(f"torchport run: cannot write the report to {path}: {exc}") from None
