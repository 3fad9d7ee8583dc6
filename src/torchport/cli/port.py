"""``torchport port PATH…``: rewrite CPU-only PyTorch code into device-agnostic, fast GPU code.

Prints a unified diff by default (nothing is written); ``--write`` applies it atomically. Code it
cannot port safely is left unchanged and listed; a file it cannot port at all (unparsable, too
deeply nested, not writable) is skipped with one line and the rest is ported. Notebooks are
ported cell by cell. The ported code needs only torch unless ``--runtime-dependency`` asks for
torchport's ``default_device``, ``to_device``, ``DeviceLoader``.
With ``--verify`` (opt-in: it runs your program) the original runs on the CPU and the port on
the GPU (or a simulated one, where there is none), each in a temporary copy of the folder; the
port is repaired where the run shows a tensor left behind, and the verdict says whether it ran
and printed the same results. Arguments for the script go after ``--``.
Exit codes: 0 ported (or nothing to do), 1 something was left unported, skipped or did not
verify, 2 bad arguments, or an internal error on some file (the others are still ported).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from torchport.cli._common import add_output_options, emit
from torchport.errors import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, UsageError


def register(sub: Any) -> None:
    p = sub.add_parser(
        "port", help="rewrite CPU-only code for any device (diff by default)", description=__doc__
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="Python files or folders")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--diff", action="store_true", help="print the diff, write nothing (default)")
    mode.add_argument("--write", action="store_true", help="apply the changes atomically")
    runtime = p.add_mutually_exclusive_group()
    runtime.add_argument(
        "--runtime-dependency",
        action="store_true",
        help="use torchport.default_device()/to_device in the ported code",
    )
    runtime.add_argument(
        "--no-runtime-dependency",
        action="store_true",
        help="ported code needs only torch (the default)",
    )
    p.add_argument("--amp", choices=("bf16",), help="add bfloat16 autocast around forward + loss")
    p.add_argument(
        "--distributed",
        action="store_true",
        help="make DDP scripts for torchrun (from DataParallel or single-process code)",
    )
    checking = p.add_argument_group("verifying the port by running it (runs your program)")
    checking.add_argument(
        "--verify",
        action="store_true",
        help="run the original (CPU) and the port (GPU, or simulated) and compare their output",
    )
    checking.add_argument("--entry", metavar="SCRIPT", help="the script to run (default: the one)")
    checking.add_argument(
        "--timeout", type=float, default=600.0, metavar="SECONDS", help="per run (default 600)"
    )
    checking.add_argument(
        "--tolerance",
        type=float,
        metavar="REL",
        help="relative difference allowed in printed numbers (default 1e-6 simulated, 2e-2 GPU)",
    )
    checking.add_argument(
        "--repairs", type=int, default=3, metavar="N", help="re-ports after failed runs (3)"
    )
    add_output_options(p)
    p.set_defaults(func=run)


def _verify(
    args: argparse.Namespace, results: list[Any], options: Any
) -> tuple[list[Any], list[Any]]:
    from torchport.port.verify import VerifySettings, findings, verify

    if args.timeout <= 0 or args.repairs < 0:
        raise UsageError("--timeout must be positive and --repairs not negative")
    settings = VerifySettings(
        entry=args.entry,
        args=tuple(args.script_args),
        timeout=args.timeout,
        tolerance=args.tolerance,
        repairs=args.repairs,
    )
    results, verdict = verify(args.paths, results, options, settings)
    for line in verdict.lines():
        print(f"torchport port --verify: {line}", file=sys.stderr)
    entry = args.entry or next((r.path for r in results if r.entry_point), results[0].path)
    return results, findings(verdict, entry)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from torchport.analyze.fixer import write_roots
    from torchport.findings import Report
    from torchport.port import PortOptions
    from torchport.port.files import diff, internal_errors, port_paths, write

    options = PortOptions(
        runtime_dependency=args.runtime_dependency, amp=args.amp, distributed=args.distributed
    )
    results = port_paths(args.paths, options)
    verdict_findings: list[Any] = []
    if args.verify:
        results, verdict_findings = _verify(args, results, options)
    elif args.script_args:
        raise UsageError("arguments after -- are for the script that --verify runs")
    changed = [r.path for r in results if r.changed]
    notes = [n for r in results for n in r.notes]
    report = Report(command="port", findings=[*notes, *verdict_findings])
    report.facts["files changed"] = len(changed)
    problems: list[str] = []
    if args.write:
        written, problems = write(results, write_roots(Path(p) for p in args.paths))
        for problem in problems:
            print(f"torchport: {problem}", file=sys.stderr)
        print(f"torchport port: wrote {len(written)} file(s)", file=sys.stderr)
    elif args.output_format == "text":
        sys.stdout.write(diff(results))
    else:
        report.facts["diff"] = diff(results)
    if args.distributed:
        for entry in (r.path for r in results if r.entry_point and "init_process_group" in r.after):
            print(f"launch with: torchrun --nproc-per-node=NUM_GPUS {entry}", file=sys.stderr)
    code = emit(report, args)
    if internal_errors(results):
        return EXIT_ERROR  # the rest was ported; this is a bug in torchport, to be reported
    return EXIT_FINDINGS if problems and code == EXIT_CLEAN and not args.exit_zero else code
