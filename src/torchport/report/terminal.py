"""The default text output: rich on a terminal, plain when piped or when NO_COLOR is set."""

from __future__ import annotations

import os
from collections import Counter
from typing import Any, TextIO

from rich.console import Console
from rich.markup import escape

from torchport.findings import Finding, Report, Safety, Severity

_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}


def console_for(stream: TextIO) -> Console:
    """A console that colours only a real terminal, and never when NO_COLOR is set."""
    is_tty = hasattr(stream, "isatty") and stream.isatty()
    return Console(
        file=stream,
        force_terminal=is_tty,
        no_color=bool(os.environ.get("NO_COLOR")) or not is_tty,
        highlight=False,
        soft_wrap=True,
        emoji=False,
        width=None if is_tty else 100,
    )


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(_scalar(v) for v in value) or "-"
    return str(value)


def _facts(console: Console, facts: dict[str, Any], indent: str = "") -> None:
    for key, value in facts.items():
        label = key.replace("_", " ")
        if isinstance(value, dict):
            console.print(f"{indent}{escape(label)}:")
            _facts(console, value, indent + "  ")
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            # rich.table (and the fractions and decimal it imports) only for facts that are rows
            from rich.table import Table

            console.print(f"{indent}{escape(label)}:")
            table = Table(show_edge=False, box=None, pad_edge=False, padding=(0, 2, 0, 0))
            columns = list(dict.fromkeys(k for row in value for k in row))
            for column in columns:
                table.add_column(column.replace("_", " "), overflow="fold")
            for row in value:
                table.add_row(*(escape(_scalar(row.get(c))) for c in columns))
            console.print(table)
        else:
            console.print(f"{indent}{escape(label)}: {escape(_scalar(value))}")


def _finding(console: Console, f: Finding) -> None:
    where = f"{f.location}: " if f.location is not None else ""
    style = _STYLE[f.severity]
    console.print(
        f"{escape(where)}[{style}]{f.code}[/] [{style}]{f.severity.label}[/] "
        f"[bold]{f.name}[/]: {escape(f.message)}"
    )
    if f.fix is not None:
        mark = ""
        if f.fix.applicable:
            mark = " (fix available)" if f.fix.safety is Safety.SAFE else " (unsafe fix available)"
        console.print(f"  [green]help[/]: {escape(f.fix.title)}{mark}")


def _count(n: int, severity: Severity) -> str:
    plural = "s" if n != 1 and severity is not Severity.INFO else ""
    return f"{n} {severity.label}{plural}"


def _summary(console: Console, findings: list[Finding], failed: Any) -> None:
    if not findings:
        # Over a run that ended early, "No findings" would read as a clean bill of health.
        if isinstance(failed, dict):
            end = "the run was interrupted" if failed.get("interrupted") else "the failure"
            console.print(f"No finding was recorded before {end}.")
        else:
            console.print("No findings.")
        return
    counts = Counter(f.severity for f in findings)
    parts = [_count(counts[s], s) for s in sorted(counts, reverse=True)]
    fixes = [f.fix for f in findings if f.fix is not None and f.fix.applicable]
    safe = sum(1 for fix in fixes if fix.safety is Safety.SAFE)
    line = f"Found {len(findings)} finding{'s' if len(findings) != 1 else ''} ({', '.join(parts)})."
    if safe:
        line += f" {safe} fixable with --fix."
    if len(fixes) > safe:
        line += f" {len(fixes) - safe} more with --unsafe-fixes."
    console.print(line)


def render(report: Report, stream: TextIO) -> None:
    console = console_for(stream)
    if report.facts:
        _facts(console, report.facts)
        console.print()
    for f in sorted(report.findings, key=Finding.sort_key):
        _finding(console, f)
    _summary(console, report.findings, report.facts.get("failed"))
    if report.verdict:
        console.print(f"[bold]{escape(report.verdict)}[/]")
