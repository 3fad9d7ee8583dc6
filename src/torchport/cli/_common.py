"""Pieces every subcommand shares: output options, exit codes, the one output channel."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn, TextIO

from torchport.errors import EXIT_CLEAN, EXIT_FINDINGS, UsageError
from torchport.findings import Report, Severity
from torchport.report import FORMATS, render


class Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line on stderr and exit code 2."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message} (see '{self.prog} --help')")


def add_output_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--output-format",
        choices=FORMATS,
        default="text",
        help="how findings are printed (default: text)",
    )
    parser.add_argument(
        "--fail-on",
        metavar="SEVERITY",
        choices=[s.label for s in Severity],
        default=None,
        help="lowest severity that makes the exit code 1 (default: warning, or the config's)",
    )
    parser.add_argument(
        "--exit-zero", action="store_true", help="exit 0 even when there are findings"
    )


def emit(
    report: Report,
    args: argparse.Namespace,
    default_fail_on: Severity = Severity.WARNING,
    stream: TextIO | None = None,
) -> int:
    """Render ``report`` to stdout in the chosen format and return the exit code."""
    render(report, args.output_format, stream or sys.stdout)
    threshold = Severity.parse(args.fail_on) if args.fail_on else default_fail_on
    if args.exit_zero or not report.fails(threshold):
        return EXIT_CLEAN
    return EXIT_FINDINGS
