"""``torchport check [PATHS]``: find CPU->GPU mistakes without running the code; ``--fix`` them.

Exit codes: 0 no findings at or above the failing severity (or ``--exit-zero``), 1 findings
(with ``--diff``: changes would be made), or a file that could not be checked or fixed, 2 usage,
configuration or internal error.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from torchport.cli._common import RawDescriptionHelpFormatter, add_output_options, emit
from torchport.errors import EXIT_CLEAN, EXIT_FINDINGS, UsageError
from torchport.findings import Report, Safety, Severity

if TYPE_CHECKING:
    from torchport.analyze.runner import FileResult, Options
    from torchport.config import Config


def register(sub: Any) -> None:
    p = sub.add_parser(
        "check",
        help="find device, transfer, dtype and multi-GPU mistakes (static, never runs code)",
        description=__doc__,
        formatter_class=RawDescriptionHelpFormatter,
    )
    p.add_argument("paths", nargs="*", type=Path, help="files or folders (default: .)")
    rules = p.add_argument_group("rule selection")
    for flag, what in (
        ("--select", "only these codes or prefixes (replaces the configured selection)"),
        ("--extend-select", "add these codes or prefixes"),
        ("--ignore", "skip these codes or prefixes"),
    ):
        rules.add_argument(flag, metavar="CODES", action="append", default=[], help=what)
    p.add_argument(
        "--exclude",
        metavar="GLOB",
        action="append",
        default=[],
        help="gitignore-style patterns of paths to skip (repeatable)",
    )
    p.add_argument("--no-gitignore", action="store_true", help="do not honour .gitignore files")
    p.add_argument("--config", type=Path, help="read [tool.torchport] from this pyproject.toml")
    _add_fix_options(p)
    p.add_argument("--statistics", action="store_true", help="count findings per rule")
    p.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=1,
        metavar="N",
        help="check files in N processes (0: one per CPU)",
    )
    add_output_options(p)
    p.set_defaults(func=run)


def _add_fix_options(p: argparse.ArgumentParser) -> None:
    fixes = p.add_argument_group("fixes")
    fixes.add_argument("--fix", action="store_true", help="apply safe fixes in place")
    fixes.add_argument(
        "--unsafe-fixes", action="store_true", help="with --fix or --diff, apply unsafe fixes too"
    )
    fixes.add_argument(
        "--diff", action="store_true", help="print the fixes as a unified diff and write nothing"
    )
    fixes.add_argument("--show-fixes", action="store_true", help="list the fixes applied")


def _codes(values: list[str]) -> tuple[str, ...]:
    return tuple(c.strip().upper() for v in values for c in v.split(",") if c.strip())


def effective_config(args: argparse.Namespace, paths: list[Path]) -> Config:
    from torchport.config import load, parse

    config = load(explicit=args.config) if args.config else load(paths[0])
    select, extend, ignore = _codes(args.select), _codes(args.extend_select), _codes(args.ignore)
    # Validate command-line selectors with the same rules (and messages) as the config file.
    parse(
        {"select": list(select or ("ALL",)), "extend-select": list(extend), "ignore": list(ignore)},
        Path("command line"),
    )
    return dataclasses.replace(
        config,
        select=select or config.select,
        extend_select=(*config.extend_select, *extend),
        ignore=(*config.ignore, *ignore),
    )


def run(args: argparse.Namespace) -> int:
    from torchport.analyze.files import compile_pattern, discover
    from torchport.analyze.fixer import write_roots
    from torchport.analyze.runner import Options, not_checked

    paths: list[Path] = args.paths or [Path(".")]
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise UsageError(f"torchport check: no such file or folder: {', '.join(missing)}")
    if args.jobs < 0:
        raise UsageError("torchport check: -j must be 0 (one per CPU) or more")
    config = effective_config(args, paths)
    base = config.root or Path.cwd()
    exclude = [compile_pattern(g, base.absolute()) for g in (*config.exclude, *args.exclude)]
    unreadable: list[tuple[Path, str]] = []
    found = discover(paths, [p for p in exclude if p], not args.no_gitignore, unreadable)
    files = list(found)
    options = Options(config, args.fix, args.unsafe_fixes, args.diff, roots=write_roots(paths))
    results = _check_all(files, options, args.jobs or os.cpu_count() or 1)
    results += [not_checked(folder, why, options) for folder, why in unreadable]
    for result in results:
        if result.problem and not any(f.code == "TP100" for f in result.findings):
            print(f"torchport: {result.path}: {result.problem}", file=sys.stderr)
    code = _print_diff(results) if args.diff else _report(results, args, config)
    # A file that was not checked, or whose fixes were not written, is never "clean".
    if code == EXIT_CLEAN and not args.exit_zero and any(r.problem for r in results):
        return EXIT_FINDINGS
    return code


def _check_all(files: list[Path], options: Options, jobs: int) -> list[FileResult]:
    from torchport.analyze.runner import check_file

    if jobs <= 1 or len(files) < 2:
        results = [check_file(f, options) for f in files]
    else:
        from concurrent.futures import ProcessPoolExecutor

        chunk = max(1, len(files) // (jobs * 8))
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            results = list(pool.map(check_file, files, [options] * len(files), chunksize=chunk))
    return results


def _print_diff(results: list[FileResult]) -> int:
    changed = [r for r in results if r.diff]
    for result in changed:
        sys.stdout.write(result.diff)
    fixes = sum(len(r.applied) for r in changed)
    print(
        f"Would fix {fixes} finding{'s' if fixes != 1 else ''} in {len(changed)} "
        f"file{'s' if len(changed) != 1 else ''}.",
        file=sys.stderr,
    )
    return EXIT_FINDINGS if changed else EXIT_CLEAN


def _report(results: list[FileResult], args: argparse.Namespace, config: Config) -> int:
    findings = [f for r in results for f in r.findings]
    facts: dict[str, Any] = {"files checked": len(results)}
    empty = sum(1 for r in results if r.empty)
    if empty:
        facts["empty files skipped"] = empty
    applied = [f for r in results for f in r.applied]
    if args.fix:
        facts["fixed"] = len(applied)
    if args.show_fixes and applied:
        facts["fixes applied"] = [
            {"location": str(f.location), "code": f.code, "fix": f.fix.title if f.fix else ""}
            for f in applied
        ]
    report = Report("check", findings=findings, facts=facts)
    if not args.statistics:
        return emit(report, args, config.fail_on)
    rows = _statistics(findings)
    if args.output_format != "text":
        facts["statistics"] = rows
        return emit(report, args, config.fail_on)
    for row in rows:
        mark = "[*]" if row["fixable"] else "[ ]"
        print(f"{row['count']:>5}  {row['code']}  {mark} {row['name']}")
    threshold = Severity.parse(args.fail_on) if args.fail_on else config.fail_on
    return EXIT_CLEAN if args.exit_zero or not report.fails(threshold) else EXIT_FINDINGS


def _statistics(findings: list[Any]) -> list[dict[str, Any]]:
    counts = Counter((f.code, f.name) for f in findings)
    fixable = Counter(
        f.code
        for f in findings
        if f.fix is not None and f.fix.applicable and f.fix.safety is Safety.SAFE
    )
    return [
        {"count": n, "code": code, "name": name, "fixable": fixable[code]}
        for (code, name), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    ]
