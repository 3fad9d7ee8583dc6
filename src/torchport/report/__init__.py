"""Renderers: a Report in, text out. They never import torch or libcst."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TextIO

from torchport.findings import Report
from torchport.report.streams import tolerant

FORMATS = ("text", "json", "sarif", "github")


def render(report: Report, fmt: str, stream: TextIO) -> None:
    """Write ``report`` to ``stream`` in format ``fmt`` (one of FORMATS).

    Characters the stream's encoding lacks are escaped (``\\xe9``), never an error.
    """
    module = _MODULES.get(fmt)
    if module is None:
        raise ValueError(f"unknown output format {fmt!r}")
    # imported when used: rich (text) takes longer to import than `check` takes on a small
    # project, and every command starts with only the renderer it prints with
    renderer: Callable[[Report, TextIO], None] = importlib.import_module(module).render
    with tolerant(stream):
        renderer(report, stream)


_MODULES = {
    "text": "torchport.report.terminal",
    "json": "torchport.report.json_format",
    "sarif": "torchport.report.sarif",
    "github": "torchport.report.github",
}


__all__ = ["FORMATS", "render"]
