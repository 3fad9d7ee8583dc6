"""torchport doctor: why the GPU is not used or not usable, and the exact fix.

Probes the environment in a subprocess (with a timeout, so a hung driver cannot hang the doctor),
diagnoses it with the TP5xx rules, runs a short smoke test on a usable GPU, and prints the facts,
the findings with their fixes, and a one-line verdict.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from torchport.cli._common import RawDescriptionHelpFormatter, add_output_options, emit
from torchport.errors import EXIT_FINDINGS, ProbeError

REQUIRE_CHOICES = ("cuda", "mps", "xpu", "any")


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds: {text!r}")
    return value


def register(sub: Any) -> None:
    p = sub.add_parser(
        "doctor",
        help="why the GPU is not used or not usable, and the exact fix",
        description=__doc__,
        formatter_class=RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--require",
        choices=REQUIRE_CHOICES,
        help="exit 1 unless this accelerator is usable (for CI gates)",
    )
    p.add_argument(
        "--timeout",
        type=_seconds,
        default=60.0,
        metavar="S",
        help="seconds the environment probe may take (default: 60)",
    )
    p.add_argument("--no-smoke", action="store_true", help="skip the smoke test on the GPU")
    add_output_options(p)
    p.add_argument(
        "--json",
        dest="output_format",
        action="store_const",
        const="json",
        help="same as --output-format json",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # Imported here so that `torchport --help` stays fast; the probe itself runs in a subprocess.
    from torchport import config
    from torchport.doctor import verdict
    from torchport.doctor.diagnose import diagnose
    from torchport.doctor.probes import collect
    from torchport.findings import Report

    settings = config.load(Path.cwd())
    probe = collect(timeout=args.timeout, smoke=not args.no_smoke)
    if probe["probe"]["status"] == "failed":
        raise ProbeError(f"could not start the environment probe: {probe['probe'].get('error')}")
    findings = [f for f in diagnose(probe) if settings.enabled(f.code)]
    facts = verdict.summarize(probe, findings)
    if args.output_format == "json":
        facts["raw_probe"] = probe  # everything collected, for bug reports and scripts
    report = Report(
        command="doctor",
        findings=findings,
        facts=facts,
        verdict=verdict.verdict(probe, findings),
    )
    code = emit(report, args, default_fail_on=settings.fail_on)
    if args.require and not verdict.requirement_met(args.require, probe, findings):
        print(f"torchport doctor: --require {args.require}: no usable device", file=sys.stderr)
        return EXIT_FINDINGS
    return code
