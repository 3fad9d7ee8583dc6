"""``--output-format sarif``: SARIF 2.1.0 as GitHub code scanning accepts it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TextIO

from torchport._version import __version__
from torchport.findings import Finding, Location, Report, Severity
from torchport.rules import get

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFO_URI = "https://github.com/torchport/torchport"
_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def _rule(code: str, name: str, severity: Severity) -> dict[str, Any]:
    rule = get(code)
    short = rule.summary() if rule is not None else name
    return {
        "id": code,
        "name": name,
        "shortDescription": {"text": short or name},
        "fullDescription": {"text": rule.doc() if rule is not None else name},
        "help": {"text": f"torchport rule {code}", "markdown": rule.doc() if rule else name},
        "helpUri": f"{INFO_URI}/blob/main/docs/rules/{code}.md",
        "defaultConfiguration": {"level": _LEVEL[severity]},
    }


def _uri(path: str) -> str:
    p = Path(path)
    try:
        return p.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return p.as_posix()


def _result(f: Finding, index: int) -> dict[str, Any]:
    result: dict[str, Any] = {
        "ruleId": f.code,
        "ruleIndex": index,
        "level": _LEVEL[f.severity],
        "message": {"text": f.message + (f" Fix: {f.fix.title}" if f.fix else "")},
    }
    loc = f.location
    if loc is not None and loc.path:
        result["locations"] = [_physical(loc)]
    related = [r for r in f.related if r.path]
    if related:
        result["relatedLocations"] = [
            {"id": i, **_physical(r), "message": {"text": "made here"}}
            for i, r in enumerate(related)
        ]
    return result


def _physical(loc: Location) -> dict[str, Any]:
    region: dict[str, int] = {"startLine": max(loc.line, 1), "startColumn": loc.column + 1}
    if loc.end_line is not None:
        region["endLine"] = loc.end_line
    if loc.end_column is not None:
        region["endColumn"] = loc.end_column + 1
    return {"physicalLocation": {"artifactLocation": {"uri": _uri(loc.path)}, "region": region}}


def to_dict(report: Report) -> dict[str, Any]:
    findings = sorted(report.findings, key=Finding.sort_key)
    index: dict[str, int] = {}
    rules: list[dict[str, Any]] = []
    for f in findings:
        if f.code not in index:
            index[f.code] = len(rules)
            rules.append(_rule(f.code, f.name, f.severity))
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "torchport",
                        "version": __version__,
                        "informationUri": INFO_URI,
                        "rules": rules,
                    }
                },
                "results": [_result(f, index[f.code]) for f in findings],
            }
        ],
    }


def render(report: Report, stream: TextIO) -> None:
    json.dump(to_dict(report), stream, indent=2)
    stream.write("\n")
