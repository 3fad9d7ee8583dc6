"""The default text output: rich on a terminal, plain when piped or when NO_COLOR is set.

Plain output is written directly: importing rich costs more than `check` takes on a small
project, and a pipe or a CI log gets the same characters from either path (a test holds them
equal). Facts that are rows (a table) still go through rich.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import TYPE_CHECKING, Any, Protocol, TextIO

from torchport.findings import Finding, Report, Safety, Severity

if TYPE_CHECKING:
    from rich.console import Console

_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}

# One piece of a line: its text and its rich style ("" for none).
Part = tuple[str, str]


def console_for(stream: TextIO) -> Console:
    """A console that colours only a real terminal, and never when NO_COLOR is set."""
    from rich.console import Console

    is_tty = _is_tty(stream)
    return Console(
        file=stream,
        force_terminal=is_tty,
        no_color=bool(os.environ.get("NO_COLOR")) or not is_tty,
        highlight=False,
        soft_wrap=True,
        emoji=False,
        width=None if is_tty else 100,
    )


def _is_tty(stream: TextIO) -> bool:
    return hasattr(stream, "isatty") and stream.isatty()


class _Printer(Protocol):
    def line(self, *parts: Part) -> None: ...


class _Plain:
    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def line(self, *parts: Part) -> None:
        self._stream.write("".join(text for text, _ in parts) + "\n")


class _Rich:
    def __init__(self, console: Console) -> None:
        self.console = console

    def line(self, *parts: Part) -> None:
        from rich.text import Text

        self.console.print(Text.assemble(*parts))


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


def _is_rows(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _has_rows(facts: dict[str, Any]) -> bool:
    return any(_is_rows(v) or (isinstance(v, dict) and _has_rows(v)) for v in facts.values())


def _table(console: Console, rows: list[dict[str, Any]]) -> None:
    from rich.table import Table
    from rich.text import Text

    table = Table(show_edge=False, box=None, pad_edge=False, padding=(0, 2, 0, 0))
    columns = list(dict.fromkeys(k for row in rows for k in row))
    for column in columns:
        table.add_column(column.replace("_", " "), overflow="fold")
    for row in rows:
        table.add_row(*(Text(_scalar(row.get(c))) for c in columns))  # never markup
    console.print(table)


def _facts(out: _Printer, facts: dict[str, Any], indent: str = "") -> None:
    for key, value in facts.items():
        label = key.replace("_", " ")
        if isinstance(value, dict):
            out.line((f"{indent}{label}:", ""))
            _facts(out, value, indent + "  ")
        elif _is_rows(value):
            out.line((f"{indent}{label}:", ""))
            assert isinstance(out, _Rich)  # render() picks rich whenever the facts hold rows
            _table(out.console, value)
        else:
            out.line((f"{indent}{label}: {_scalar(value)}", ""))


def _finding(out: _Printer, f: Finding) -> None:
    where = f"{f.location}: " if f.location is not None else ""
    style = _STYLE[f.severity]
    out.line(
        (where, ""),
        (f.code, style),
        (" ", ""),
        (f.severity.label, style),
        (" ", ""),
        (f.name, "bold"),
        (f": {f.message}", ""),
    )
    if f.fix is not None:
        mark = ""
        if f.fix.applicable:
            mark = " (fix available)" if f.fix.safety is Safety.SAFE else " (unsafe fix available)"
        out.line(("  ", ""), ("help", "green"), (f": {f.fix.title}{mark}", ""))


def _count(n: int, severity: Severity) -> str:
    plural = "s" if n != 1 and severity is not Severity.INFO else ""
    return f"{n} {severity.label}{plural}"


def _summary(findings: list[Finding], failed: Any) -> str:
    if not findings:
        # Over a run that ended early, "No findings" would read as a clean bill of health.
        if isinstance(failed, dict):
            end = "the run was interrupted" if failed.get("interrupted") else "the failure"
            return f"No finding was recorded before {end}."
        return "No findings."
    counts = Counter(f.severity for f in findings)
    parts = [_count(counts[s], s) for s in sorted(counts, reverse=True)]
    fixes = [f.fix for f in findings if f.fix is not None and f.fix.applicable]
    safe = sum(1 for fix in fixes if fix.safety is Safety.SAFE)
    line = f"Found {len(findings)} finding{'s' if len(findings) != 1 else ''} ({', '.join(parts)})."
    if safe:
        line += f" {safe} fixable with --fix."
    if len(fixes) > safe:
        line += f" {len(fixes) - safe} more with --unsafe-fixes."
    return line


def render(report: Report, stream: TextIO) -> None:
    plain = not _is_tty(stream) and not _has_rows(report.facts)
    out: _Printer = _Plain(stream) if plain else _Rich(console_for(stream))
    if report.facts:
        _facts(out, report.facts)
        out.line()
    for f in sorted(report.findings, key=Finding.sort_key):
        _finding(out, f)
    out.line((_summary(report.findings, report.facts.get("failed")), ""))
    if report.verdict:
        out.line((report.verdict, "bold"))
