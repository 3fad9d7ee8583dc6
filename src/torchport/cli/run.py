"""``torchport run [OPTIONS] SCRIPT [ARGS...]`` / ``torchport run -m MODULE [ARGS...]``.

Runs the program as ``python`` would (``__main__``, ``sys.argv``, ``sys.path``, ``__file__``,
its exit code, stdout, stderr and tracebacks; SCRIPT may be a folder or a zip file with a
``__main__.py``) under observation, then writes the report to stderr (or ``--report FILE``),
also when the program raises, exits or is interrupted. The exit code is the program's; with
``--fail-on SEVERITY`` findings at or above it turn a clean exit into 1.

``--report FILE`` is checked before the program starts: it must be writable, and an existing
file must be a torchport report (or empty) unless ``--force-report`` is given. A report that
cannot be written after all goes to stderr, with one line saying why; the exit code stays the
program's.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import Any

from torchport.cli._common import RawDescriptionHelpFormatter, add_output_options
from torchport.errors import EXIT_FINDINGS, EXIT_INTERRUPTED, UsageError, require_torch
from torchport.findings import Report, Severity
from torchport.report import destination, render, streams


def register(sub: Any) -> None:
    p = sub.add_parser(
        "run",
        help="run a script under observation (--simulate cuda pretends a GPU)",
        description=__doc__,
        formatter_class=RawDescriptionHelpFormatter,
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
    p.add_argument(
        "--every-step",
        action="store_true",
        help="observe every op of every step (slower); by default a model's steps are sampled "
        "op by op after its first 32 calls, while syncs and copies are always counted",
    )
    p.add_argument("--select", metavar="CODES", help="comma-separated codes or prefixes")
    p.add_argument("--ignore", metavar="CODES", help="comma-separated codes or prefixes")
    p.add_argument("--report", metavar="FILE", help="write the report to FILE, not stderr")
    p.add_argument(
        "--force-report",
        action="store_true",
        help="let --report overwrite an existing file that is not a torchport report",
    )
    add_output_options(p)
    p.add_argument("program", nargs=argparse.REMAINDER, help="SCRIPT [ARGS...] or ARGS for -m")
    p.set_defaults(func=run)


def _codes(text: str | None, default: list[str]) -> list[str]:
    return [c.strip() for c in text.split(",") if c.strip()] if text else default


def run(args: argparse.Namespace) -> int:
    if args.module is None and not args.program:
        raise UsageError("torchport run: give a SCRIPT to run, or -m MODULE")
    if args.module is None and not os.path.exists(args.program[0]):
        raise UsageError(f"torchport run: no such script: {args.program[0]}")
    # Checked before anything runs, and resolved against the directory run starts in.
    target = destination.prepare(args.report, args.force_report) if args.report else None
    require_torch("torchport run")
    from torchport.runtime import watch
    from torchport.runtime.program import main_module_missing, run_program

    if args.module is None and main_module_missing(args.program[0]):
        raise UsageError(f"torchport run: can't find '__main__' module in {args.program[0]!r}")
    watcher = watch(
        args.simulate,
        check_finite=args.check_finite,
        strict=args.strict,
        every_step=args.every_step,
        select=_codes(args.select, ["ALL"]),
        ignore=_codes(args.ignore, []),
    )
    code = EXIT_INTERRUPTED
    try:
        code = run_program(watcher, args.module, list(args.program))
    finally:
        report = watcher.report()
        _deliver(report, args.output_format, target)
    threshold = Severity.parse(args.fail_on) if args.fail_on else None
    if code == 0 and threshold is not None and not args.exit_zero and report.fails(threshold):
        return EXIT_FINDINGS
    return code


def _deliver(report: Report, fmt: str, target: destination.ReportFile | None) -> None:
    """The report to its file, or to stderr; never an error that would change the exit code."""
    streams.flush(sys.stdout)
    if target is not None:
        try:
            destination.write(target, report, fmt)
            return
        except OSError as exc:
            reason = exc.strerror or str(exc)
            streams.say(
                f"torchport run: cannot write the report to {target.shown} ({reason}); "
                "here it is on stderr instead"
            )
    with streams.stderr_stream() as stream:
        if stream is not None:
            with contextlib.suppress(OSError):  # stderr gone mid-write: nowhere left to say so
                render(report, fmt, stream)
                stream.flush()
