"""``torchport bench transfer|loader``: measure against this machine's own ceiling.

transfer: host<->device bandwidth across sizes, pageable and pinned, blocking and non_blocking,
each as a share of the best pinned figure. loader: training-loop throughput of a naive .to()
loop, a pinned DataLoader, DeviceLoader and the two bounds, on a synthetic input-bound model.
Without a GPU both say so and measure what the CPU allows.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from torchport.cli._common import Parser
from torchport.errors import EXIT_CLEAN, UsageError, require_torch


def register(sub: Any) -> None:
    parser = sub.add_parser("bench", help="measure transfer bandwidth and loader throughput",
                            description=__doc__)  # fmt: skip
    which = parser.add_subparsers(dest="bench", metavar="BENCH", parser_class=Parser)
    transfer = which.add_parser("transfer", help="host<->device bandwidth across sizes")
    transfer.add_argument(
        "--sizes",
        default=None,
        help="comma-separated copy sizes (default 4KiB,64KiB,1MiB,...,256MiB)",
    )
    transfer.add_argument("--plot", metavar="FILE.png", help="also draw the figures (matplotlib)")
    loader = which.add_parser("loader", help="training-loop throughput of the ways to feed a GPU")
    loader.add_argument("--leaves", type=int, default=16, help="tensors per batch (default 16)")
    loader.add_argument("--leaf-size", default="256KiB", help="bytes per tensor (default 256KiB)")
    loader.add_argument("--steps", type=int, default=100, help="steps per mode (default 100)")
    loader.add_argument("--depths", default="1,2,4", help="DeviceLoader prefetch depths")
    loader.add_argument("--drift-steps", type=int, default=2000,
                        help="steps of the reserved-memory drift run (CUDA)")  # fmt: skip
    for command in (transfer, loader):
        command.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.bench is None:
        raise UsageError("torchport bench: choose 'transfer' or 'loader' (see --help)")
    require_torch(f"torchport bench {args.bench}")
    from torchport.bench import plot

    if getattr(args, "plot", None) and not plot.available():
        raise UsageError(
            "torchport bench transfer: --plot needs matplotlib, which is not installed "
            "(pip install matplotlib), or use --json and plot elsewhere"
        )
    result = _transfer(args) if args.bench == "transfer" else _loader(args)
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        from torchport.bench.render import render

        render(args.bench, result, sys.stdout)
    if getattr(args, "plot", None):
        plot.plot_transfer(result, args.plot)
    return EXIT_CLEAN


def _transfer(args: argparse.Namespace) -> dict[str, Any]:
    from torchport.bench import measure_transfer, parse_size
    from torchport.bench.transfer import DEFAULT_SIZES

    sizes: tuple[int, ...] = DEFAULT_SIZES
    if args.sizes:
        try:
            sizes = tuple(parse_size(s) for s in args.sizes.split(","))
        except ValueError as exc:
            raise UsageError(f"torchport bench transfer: --sizes: {exc}") from None
    with _progress("bench transfer") as advance:
        return measure_transfer(sizes, progress=advance)


def _loader(args: argparse.Namespace) -> dict[str, Any]:
    from torchport.bench import LoaderSpec, measure_loader, parse_size

    try:
        depths = tuple(int(d) for d in args.depths.split(","))
        spec = LoaderSpec(leaves=args.leaves, leaf_bytes=parse_size(args.leaf_size),
                          steps=args.steps, depths=depths,
                          drift_steps=args.drift_steps)  # fmt: skip
    except ValueError as exc:
        raise UsageError(f"torchport bench loader: {exc}") from None
    if spec.leaves < 1 or spec.steps <= 10 or min(depths) < 1 or spec.drift_steps < 1:
        raise UsageError(
            "torchport bench loader: need --leaves >= 1, --steps > 10, depths >= 1, "
            "--drift-steps >= 1"
        )
    with _progress("bench loader") as advance:
        return measure_loader(spec, progress=advance)


@contextmanager
def _progress(title: str) -> Iterator[Callable[[int, int, str], None]]:
    """A progress bar on stderr (stdout stays clean for tables and --json)."""
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(title, total=None)

        def advance(done: int, total: int, label: str) -> None:
            bar.update(task, completed=done, total=total, description=f"{title}: {label}")

        yield advance
