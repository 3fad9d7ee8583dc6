"""Renderers: a Report in, text out. They never import torch or libcst."""

from __future__ import annotations

from typing import TextIO

from torchport.findings import Report
from torchport.report import github, json_format, sarif

FORMATS = ("text", "json", "sarif", "github")


def render(report: Report, fmt: str, stream: TextIO) -> None:
    """Write ``report`` to ``stream`` in format ``fmt`` (one of FORMATS)."""
    if fmt == "text":
        # rich takes longer to import than `check` takes on a small project: only for text
        from torchport.report import terminal

        terminal.render(report, stream)
    elif fmt == "json":
        json_format.render(report, stream)
    elif fmt == "sarif":
        sarif.render(report, stream)
    elif fmt == "github":
        github.render(report, stream)
    else:
        raise ValueError(f"unknown output format {fmt!r}")


__all__ = ["FORMATS", "render"]
