"""Read a file for checking: Python or a Jupyter notebook, with every way it can be bad.

Python files are decoded as Python decodes them (a UTF-8 BOM, a PEP 263 ``# coding:`` line),
and written back in the same encoding. A notebook's code cells are joined into one Python text
(so names flow between cells), with a marker line between cells and IPython syntax (magics,
shell escapes, help lines) replaced by placeholder statements, one line for one line; positions
map back to (cell, line) and fixed text splits back into the cells.
"""

from __future__ import annotations

import codecs
import io
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from torchport.findings import Finding, Location

_BOUNDARY = "# torchport: cell boundary"
# Lines IPython rewrites before Python sees them, when they start a statement: line magics and
# shell escapes (``%time``, ``!ls``), ``files = !ls`` / ``t = %timeit f()``, and help (``?x``,
# ``x?``, ``obj.attr??``).
_MAGIC = re.compile(r"^\s*(?:[%!?]|[\w.,\s]+?\s*=\s*[%!](?!=))")
_HELP = re.compile(r"^\s*[\w.*\[\]]+\?\??\s*$")


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
            raise BadFile("the changes would move code across cells; not written")
        for index, chunk in zip(self.cells, chunks, strict=True):
            lines = [self.magics.get(line.strip(), line) for line in chunk.split("\n")]
            source = "\n".join(lines)
            self.data["cells"][index]["source"] = source.splitlines(keepends=True)
        import json  # only notebooks need it; most runs read none

        return json.dumps(self.data, indent=self.indent, ensure_ascii=False) + "\n"


@dataclass
class Source:
    """A file to analyse: its bytes, its text and the Python text drawn from it."""

    path: Path
    data: bytes  # the file as on disk
    raw: str  # its decoded text
    python: str  # the Python text that is analysed
    encoding: str = "utf-8"  # as Python reads it: "utf-8-sig" keeps a BOM when written back
    notebook: Notebook | None = None

    def locate(self, finding: Finding) -> Finding:
        book = self.notebook
        if book is None or finding.location is None:
            return finding
        related = tuple(
            book.locate(r) if r.path == finding.location.path else r for r in finding.related
        )
        return replace(finding, location=book.locate(finding.location), related=related)

    def position(self, path: str, line: int) -> Location:
        """A place in the analysed text, as the user sees it (cell and line in a notebook)."""
        loc = Location(path, line)
        return loc if self.notebook is None else self.notebook.locate(loc)

    def written(self, python: str) -> str:
        return python if self.notebook is None else self.notebook.rebuild(python)

    def encoded(self, python: str) -> bytes:
        """The file's new bytes for the changed ``python``, in the file's own encoding."""
        text = self.written(python)
        try:
            return text.encode(self.encoding)
        except UnicodeEncodeError:
            raise BadFile(
                f"the new text cannot be encoded as {self.encoding}; not written"
            ) from None


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
    if path.suffix == ".ipynb":
        return _notebook(path, data)
    text, encoding = decode(data)
    return Source(path, data, text, text, encoding)


def decode(data: bytes) -> tuple[str, str]:
    """``data`` decoded as Python does (BOM, PEP 263 declaration, else UTF-8) and the codec."""
    head = data.split(b"\n", 2)[:2]
    if not data.startswith(codecs.BOM_UTF8) and not any(b"coding" in line for line in head):
        encoding = "utf-8"  # no BOM and no declaration: what tokenize would say, faster
    else:
        encoding = _declared(data)
    try:
        return data.decode(encoding), encoding
    except UnicodeDecodeError as exc:
        name = "UTF-8" if encoding.startswith("utf-8") else encoding
        raise BadFile(f"not {name} (invalid byte at offset {exc.start})") from None


def _declared(data: bytes) -> str:
    import tokenize  # only files with a BOM or a declaration need it

    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        if not exc.msg.startswith("invalid or missing"):
            raise BadFile(f"bad encoding declaration: {exc.msg}") from None
        encoding = "utf-8"  # no declaration and the first lines are not UTF-8: say where
    return encoding


def _notebook(path: Path, data: bytes) -> Source:
    encoding = "utf-8-sig" if data.startswith(codecs.BOM_UTF8) else "utf-8"
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise BadFile(f"not UTF-8 (invalid byte at offset {exc.start})") from None
    import json  # only notebooks need it; most runs read none

    try:
        content = json.loads(text)
    except ValueError as exc:
        raise BadFile(f"not a Jupyter notebook: not valid JSON ({exc})") from None
    except RecursionError:
        raise BadFile("not a Jupyter notebook: JSON nested too deeply") from None
    cells = _cells(content)
    second = text.split("\n", 2)[1] if text.count("\n") > 1 else ""
    book = Notebook(content, indent=max(len(second) - len(second.lstrip(" ")), 1))
    parts: list[str] = []
    line = 1
    for index, body in cells:
        lines = _placeholders(book, body.split("\n"))
        if parts:
            line += 1  # the boundary line
        for offset in range(len(lines)):
            book.line_map[line + offset] = (index + 1, offset + 1)
        line += len(lines)
        book.cells.append(index)
        parts.append("\n".join(lines))
    return Source(path, data, text, f"\n{_BOUNDARY}\n".join(parts), encoding, book)


def _cells(content: object) -> list[tuple[int, str]]:
    """(index, source) of each code cell; BadFile naming the first thing that is malformed."""
    if not isinstance(content, dict):
        raise BadFile("not a Jupyter notebook: the JSON is not an object")
    cells = content.get("cells")
    if not isinstance(cells, list):
        raise BadFile("not a Jupyter notebook: 'cells' is missing or not a list")
    code: list[tuple[int, str]] = []
    for index, cell in enumerate(cells):
        if not isinstance(cell, dict):
            raise BadFile(f"not a Jupyter notebook: cell {index + 1} is not an object")
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(s, str) for s in source):
            source = "".join(source)
        if not isinstance(source, str):
            raise BadFile(f"not a Jupyter notebook: the source of cell {index + 1} is not text")
        code.append((index, source))
    return code


def _placeholders(book: Notebook, lines: list[str]) -> list[str]:
    """Replace IPython-only lines (magics, ``!`` escapes, help, whole ``%%`` cells) by ``pass``.

    Only a line that starts a statement can be IPython syntax: a ``%`` line inside brackets or
    a string, or after a backslash, is Python (``x = (a\\n% b)``) and is kept.
    """
    out: list[str] = []
    opaque = bool(lines) and lines[0].lstrip().startswith("%%")
    depth, quote, continued = 0, "", False
    for line in lines:
        starts = depth == 0 and not quote and not continued
        if opaque or (starts and (_MAGIC.match(line) or _HELP.match(line))):
            indent = "" if opaque else line[: len(line) - len(line.lstrip())]
            key = f"pass  # torchport: magic {len(book.magics)}"
            book.magics[key] = line
            out.append(indent + key)
            continue
        out.append(line)
        depth, quote, continued = _scan(line.rstrip("\r"), depth, quote)
    return out


def _scan(line: str, depth: int, quote: str) -> tuple[int, str, bool]:
    """After ``line``: open bracket depth, open triple quote, and a trailing backslash."""
    i = 0
    while i < len(line):
        char = line[i]
        if quote:
            if char == "\\":
                i += 2
            elif line.startswith(quote, i):
                i, quote = i + len(quote), ""
            else:
                i += 1
            continue
        if char == "#":
            break
        if char in "\"'":
            quote = line[i : i + 3] if line[i : i + 3] in ('"""', "'''") else char
            i += len(quote)
            continue
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth = max(depth - 1, 0)
        elif char == "\\" and i == len(line) - 1:
            return depth, quote, True
        i += 1
    return depth, quote if len(quote) == 3 else "", False
