"""The ``torchport`` command: parse arguments, call a pipeline, render, exit.

Exit codes (the same for every subcommand): 0 nothing found, 1 findings at or above the failing
severity, 2 usage, configuration or internal error (one line on stderr), 130 interrupted.
"""

from __future__ import annotations

import importlib
import os
import sys

from torchport._version import __version__
from torchport.cli._common import Parser
from torchport.errors import EXIT_ERROR, EXIT_INTERRUPTED, TorchportError
from torchport.report.streams import say, tolerant

# Each module registers one subcommand and imports torch lazily, so --help stays fast. Only
# the chosen subcommand's module is imported (its arguments are its own); the others appear in
# the listing by these one-line summaries, which a test keeps equal to the modules' own.
SUBCOMMANDS = {
    "check": "find device, transfer, dtype and multi-GPU mistakes (static, never runs code)",
    "port": "rewrite CPU-only code for any device (diff by default)",
    "run": "run a script under observation (--simulate cuda pretends a GPU)",
    "doctor": "why the GPU is not used or not usable, and the exact fix",
    "bench": "measure transfer bandwidth and loader throughput",
    "rule": "print the documentation of a rule",
}


def build_parser(argv: list[str] | None = None) -> Parser:
    """The command-line parser; with ``argv``, only the subcommand it names is fully built."""
    parser = Parser(
        prog="torchport",
        description="Make PyTorch code written for the CPU run correctly and fast on a GPU.",
        epilog="Exit codes: 0 clean, 1 findings, 2 usage/config/internal error.",
    )
    parser.add_argument("--version", action="version", version=f"torchport {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    chosen = argv[0] if argv and argv[0] in SUBCOMMANDS else None
    for name, summary in SUBCOMMANDS.items():
        if chosen is not None and name != chosen:
            sub.add_parser(name, help=summary)
            continue
        try:
            module = importlib.import_module(f"torchport.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"torchport.cli.{name}":
                raise
            continue
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        argv = list(sys.argv[1:] if argv is None else argv)
        parser = build_parser(argv)
        passed: list[str] = []
        if argv[:1] == ["port"] and "--" in argv:  # `port --verify X -- ARGS`: the script's own
            cut = argv.index("--")
            argv, passed = argv[:cut], argv[cut + 1 :]
        args = parser.parse_args(argv)
        args.script_args = passed
        if args.command is None:
            parser.print_help()
            return EXIT_ERROR
        if args.command == "run":
            return int(args.func(args))  # the program's streams are the program's business
        # A path or a message the terminal cannot encode is escaped, never an internal error.
        with tolerant(sys.stdout), tolerant(sys.stderr):
            return int(args.func(args))
    except TorchportError as exc:
        say(f"torchport: error: {exc}")
        return exc.exit_code
    except KeyboardInterrupt:
        say("torchport: interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # stdout closed early (e.g. piped into `head`): not an error of ours or the user's.
        sys.stderr.close()
        return EXIT_ERROR
    except Exception as exc:  # noqa: BLE001 - the last line of defence: no traceback for users
        if os.environ.get("TORCHPORT_DEBUG"):
            import traceback  # only here: the start of every command stays lean

            traceback.print_exc()
        say(
            f"torchport: internal error: {type(exc).__name__}: {exc} "
            "(set TORCHPORT_DEBUG=1 for the traceback, and please report it)"
        )
        return EXIT_ERROR
