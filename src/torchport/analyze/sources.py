"""Read a file for checking: Python or a Jupyter notebook, with every way it can be bad.

A notebook's code cells are joined into one Python text (so names flow between cells), with
a marker line between cells and IPython magics replaced by placeholder statements; positions
map back to (cell, line) and fixed text splits back into the cells.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torchport.findings import Finding, Location

_BOUNDARY = "# torchport: cell boundary"
_MAGIC = re.compile(r"^(\s*)([%!?].*)$")


class BadFile(Exception):
    """A file that cannot be checked; the message says why (one line)."""


@dataclass
class Notebook:
    """A notebook's JSON plus the mapping from the joined Python text back to its cells."""

    data: dict[str, Any]
    cells: list[int] = field(default_factory=list)  # notebook index of each code cell
    line_map: dict[int, tuple[int, int]] = field(default_factory=dict)
    magics: dict[str, str] = field(default_factory=dict)
    indent: int = 1

    def locate(self, loc: Location) -> Location:
        cell, line = self.line_map.get(loc.line, (None, loc.line))
        end = self.line_map.get(loc.end_line or loc.line, (cell, loc.end_line))[1]
        return Location(loc.path, line, loc.column, end, loc.end_column, cell)

    def rebuild(self, text: str) -> str:
        """The notebook JSON with each code cell's source taken from the fixed ``text``."""
        chunks = text.split(f"\n{_BOUNDARY}\n")
        if len(chunks) != len(self.cells):
            raise BadFile("fixes changed the cell structure; not written")
        for index, chunk in zip(self.cells, chunks, strict=True):
            lines = [self.magics.get(line.strip(), line) for line in chunk.split("\n")]
            source = "\n".join(lines)
            self.data["cells"][index]["source"] = source.splitlines(keepends=True)
        return json.dumps(self.data, indent=self.indent, ensure_ascii=False) + "\n"


@dataclass
class Source:
    path: Path
    raw: str  # the file's text as on disk
    python: str  # the Python text that is analysed
    notebook: Notebook | None = None

    def locate(self, finding: Finding) -> Finding:
        if self.notebook is None or finding.location is None:
            return finding
        from dataclasses import replace

        return replace(finding, location=self.notebook.locate(finding.location))

    def written(self, python: str) -> str:
        return python if self.notebook is None else self.notebook.rebuild(python)


def read(path: Path) -> Source | None:
    """The file's Source, None when it is empty; BadFile when it cannot be checked."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise BadFile(f"cannot read: {exc.strerror or exc}") from None
    if not data.strip():
        return None
    if b"\x00" in data[:8192]:
        raise BadFile("binary file, not Python source")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadFile(f"not UTF-8 (invalid byte at offset {exc.start})") from None
    if path.suffix == ".ipynb":
        return _notebook(path, text)
    return Source(path, text, text)


def _notebook(path: Path, text: str) -> Source:
    try:
        data = json.loads(text)
        cells = data["cells"]
    except (ValueError, KeyError, TypeError):
        raise BadFile("not a valid Jupyter notebook (JSON with a 'cells' list)") from None
    second = text.split("\n", 2)[1] if text.count("\n") > 1 else ""
    book = Notebook(data, indent=max(len(second) - len(second.lstrip(" ")), 1))
    parts: list[str] = []
    line = 1
    for index, cell in enumerate(cells):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        body = "".join(source) if isinstance(source, list) else str(source)
        lines = _placeholders(book, body.split("\n"))
        if parts:
            line += 1  # the boundary line
        for offset in range(len(lines)):
            book.line_map[line + offset] = (index + 1, offset + 1)
        line += len(lines)
        book.cells.append(index)
        parts.append("\n".join(lines))
    return Source(path, text, f"\n{_BOUNDARY}\n".join(parts), book)


def _placeholders(book: Notebook, lines: list[str]) -> list[str]:
    """Replace IPython magics (``%time``, ``!pip``, whole ``%%bash`` cells) by ``pass``."""
    out: list[str] = []
    opaque = bool(lines) and lines[0].lstrip().startswith("%%")
    for line in lines:
        match = _MAGIC.match(line)
        if opaque or match:
            indent = "" if opaque else match.group(1)  # type: ignore[union-attr]
            key = f"pass  # torchport: magic {len(book.magics)}"
            book.magics[key] = line
            out.append(indent + key)
        else:
            out.append(line)
    return out
