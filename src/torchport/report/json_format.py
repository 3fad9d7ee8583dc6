"""``--output-format json``: a stable, documented schema (see docs/json-schema.md).

Top level: ``tool``, ``version``, ``schema_version``, ``command``, ``findings``, ``facts``,
``verdict`` and ``summary``. Each finding has ``code``, ``name``, ``severity``, ``message``,
``path``, ``line``, ``column``, ``end_line``, ``end_column``, ``cell``, ``fix``, ``details`` and
``related``.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, TextIO

from torchport._version import __version__
from torchport.findings import Finding, Fix, Location, Report

SCHEMA_VERSION = 1


def fix_to_dict(fix: Fix | None) -> dict[str, Any] | None:
    if fix is None:
        return None
    return {
        "title": fix.title,
        "safety": fix.safety.value,
        "applicable": fix.applicable,
        "edits": [
            {
                "line": e.line,
                "column": e.column,
                "end_line": e.end_line,
                "end_column": e.end_column,
                "content": e.content,
            }
            for e in fix.edits
        ],
    }


def finding_to_dict(f: Finding) -> dict[str, Any]:
    loc = f.location
    return {
        "code": f.code,
        "name": f.name,
        "severity": f.severity.label,
        "message": f.message,
        "path": loc.path if loc else None,
        "line": loc.line if loc else None,
        "column": loc.column + 1 if loc else None,
        "end_line": loc.end_line if loc else None,
        "end_column": loc.end_column + 1 if loc and loc.end_column is not None else None,
        "cell": loc.cell if loc else None,
        "fix": fix_to_dict(f.fix),
        "details": f.details,
        "related": [_place(r) for r in f.related],
    }


def _place(loc: Location) -> dict[str, Any]:
    return {"path": loc.path, "line": loc.line, "column": loc.column + 1, "cell": loc.cell}


def summary(report: Report) -> dict[str, Any]:
    findings = report.findings
    return {
        "total": len(findings),
        "by_severity": dict(Counter(f.severity.label for f in findings)),
        "by_code": dict(sorted(Counter(f.code for f in findings).items())),
        "fixable": sum(1 for f in findings if f.fix is not None and f.fix.applicable),
    }


def to_dict(report: Report) -> dict[str, Any]:
    return {
        "tool": "torchport",
        "version": __version__,
        "schema_version": SCHEMA_VERSION,
        "command": report.command,
        "findings": [finding_to_dict(f) for f in sorted(report.findings, key=Finding.sort_key)],
        "facts": report.facts,
        "verdict": report.verdict,
        "summary": summary(report),
    }


def render(report: Report, stream: TextIO) -> None:
    json.dump(to_dict(report), stream, indent=2, default=str)
    stream.write("\n")
