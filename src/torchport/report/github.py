"""``--output-format github``: GitHub Actions workflow annotations, one line per finding."""

from __future__ import annotations

from typing import TextIO

from torchport.findings import Finding, Report, Severity

_COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def line_for(f: Finding) -> str:
    props: list[str] = []
    loc = f.location
    if loc is not None and loc.path:
        props.append(f"file={_prop(loc.path)}")
        if loc.line:
            props += [f"line={loc.line}", f"col={loc.column + 1}"]
        if loc.end_line is not None:
            props.append(f"endLine={loc.end_line}")
        if loc.end_column is not None:
            props.append(f"endColumn={loc.end_column + 1}")
    props.append(f"title={_prop(f'{f.code} {f.name}')}")
    message = f.message + (f" Fix: {f.fix.title}" if f.fix else "")
    return f"::{_COMMAND[f.severity]} {','.join(props)}::{_data(message)}"


def render(report: Report, stream: TextIO) -> None:
    for f in sorted(report.findings, key=Finding.sort_key):
        stream.write(line_for(f) + "\n")
    if report.verdict:
        stream.write(f"::notice title=torchport {report.command}::{_data(report.verdict)}\n")
