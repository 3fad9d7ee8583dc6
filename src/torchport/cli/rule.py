"""``torchport rule CODE`` / ``torchport rule --all``: print rule documentation."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from torchport.errors import EXIT_CLEAN, UsageError
from torchport.rules import Rule, all_rules, get
from torchport.rules.docs import page


def register(sub: Any) -> None:
    p = sub.add_parser("rule", help="print the documentation of a rule", description=__doc__)
    p.add_argument("code", nargs="?", help="a rule code (TP101) or name (to-result-discarded)")
    p.add_argument("--all", action="store_true", help="print every rule")
    p.add_argument("--output-format", choices=("text", "json"), default="text")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.all == bool(args.code):
        raise UsageError("torchport rule: give either a rule code or --all")
    rules = all_rules() if args.all else [_lookup(args.code)]
    if args.output_format == "json":
        payload = [
            {"code": r.code, "name": r.name, "severity": r.severity.label, "doc": r.doc()}
            for r in rules
        ]
        json.dump(payload if args.all else payload[0], sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write("\n".join(page(r) for r in rules))
    return EXIT_CLEAN


def _lookup(code: str) -> type[Rule]:
    rule = get(code)
    if rule is None:
        raise UsageError(f"torchport rule: no rule {code!r} (see 'torchport rule --all')")
    return rule
