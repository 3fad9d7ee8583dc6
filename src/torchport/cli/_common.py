"""Pieces every subcommand shares: output options, exit codes, the one output channel."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, NoReturn, TextIO

from torchport.errors import EXIT_CLEAN, EXIT_FINDINGS, UsageError
from torchport.findings import Report, Severity
from torchport.report import FORMATS, render


def terminal_columns() -> int:
    """``shutil.get_terminal_size().columns``, without importing shutil.

    argparse asks shutil for the width each time it makes a formatter (for every argument
    added, not only to print help), and shutil imports bz2 and lzma: a cost on every start.
    """
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    stdout = sys.__stdout__
    try:
        columns = os.get_terminal_size(stdout.fileno()).columns if stdout is not None else 0
    except (AttributeError, ValueError, OSError):  # closed or detached, or not a terminal
        columns = 0
    return columns or 80


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, at the width argparse would use (see terminal_columns)."""

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        width = terminal_columns() - 2 if width is None else width
        super().__init__(prog, indent_increment, max_help_position, width)


class RawDescriptionHelpFormatter(HelpFormatter, argparse.RawDescriptionHelpFormatter):
    """argparse's RawDescriptionHelpFormatter, at the width argparse would use."""


class Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line on stderr and exit code 2."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

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
