"""Renderers: a Report in, text out. They never import torch or libcst."""

from __future__ import annotations

from collections.abc import Callable
from typing import TextIO

from torchport.findings import Report
from torchport.report import github, json_format, sarif
from torchport.report.streams import tolerant

FORMATS = ("text", "json", "sarif", "github")


def render(report: Report, fmt: str, stream: TextIO) -> None:
    """Write ``report`` to ``stream`` in format ``fmt`` (one of FORMATS).

    Characters the stream's encoding lacks are escaped (``\\xe9``), never an error.
    """
    if fmt == "text":
        # rich takes longer to import than `check` takes on a small project: only for text
        from torchport.report import terminal

        renderer: Callable[[Report, TextIO], None] = terminal.render
    elif fmt in _RENDERERS:
        renderer = _RENDERERS[fmt]
    else:
        raise ValueError(f"unknown output format {fmt!r}")
    with tolerant(stream):
        renderer(report, stream)


_RENDERERS = {
    "json": json_format.render,
    "sarif": sarif.render,
    "github": github.render,
}


__all__ = ["FORMATS", "render"]
