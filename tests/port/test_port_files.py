"""``port`` at the file level is as robust as ``check``: every output parses, a file it cannot
handle is skipped with one line while the rest is ported, notebooks go cell by cell, and
writes keep encodings, links and permissions."""

from __future__ import annotations

import codecs
import json
import os
import subprocess
import sys
from pathlib import Path

import libcst as cst
import pytest

from torchport.cli import main
from torchport.port import PortResult, files, snippets

SCRIPT = "import torch\nimport torch.nn as nn\n\nmodel = nn.Linear(3, 1)\nx = torch.randn(4, 3)\n"
PORTED_LINE = "model = nn.Linear(3, 1).to(device)"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text(SCRIPT)
    return tmp_path


DEEP = {
    "plus.py": "x = " + "+".join(["a"] * 400) + "\n",
    "calls.py": "x = " + "f(" * 150 + "1" + ")" * 150 + "\n",
    "conditional.py": "x = " + "a if b else " * 900 + "c\n",
    "and_chain.py": "x = " + " and ".join(["a"] * 10_000) + "\n",  # segfaulted libcst's parser
}


def test_deeply_nested_files_are_skipped_with_one_line_and_the_rest_is_ported(
    folder: Path,
) -> None:
    for name, text in DEEP.items():
        (folder / name).write_text(text)
    # A subprocess: before the depth check, the ``and`` chain killed the interpreter.
    done = subprocess.run(
        [sys.executable, "-m", "torchport", "port", "--write", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    skipped = [line for line in done.stdout.splitlines() if "was not ported" in line]
    assert sorted(line.split(":")[0] for line in skipped) == sorted(
        str(folder / name) for name in DEEP
    )
    assert all("nested too deeply" in line for line in skipped)
    assert PORTED_LINE in (folder / "train.py").read_text()
    assert all((folder / name).read_text() == text for name, text in DEEP.items())


def test_nesting_depth_counts_what_libcst_nests() -> None:
    import ast

    assert files.nesting_depth(ast.parse("x = a and b and c and d")) >= 5
    assert files.nesting_depth(ast.parse(DEEP["calls.py"])) > files.MAX_DEPTH
    assert files.nesting_depth(ast.parse(SCRIPT)) < 20


def test_a_long_line_with_a_bare_generator_argument_is_not_split_into_invalid_code() -> None:
    line = cst.parse_statement(
        "nodes_of_the_graph = tuple("
        "n for n in graph_nodes_with_a_long_name_that_goes_on_and_on_and_on)\n"
    )
    assert isinstance(line, cst.SimpleStatementLine)
    code = cst.Module(body=[snippets.exploded(line)]).code
    compile(code, "<exploded>", "exec")


def _broken_port(source: str, path: str, *_args: object) -> PortResult:
    if path.endswith("victim.py"):
        return PortResult(path, source, source + "def (:\n")
    raise ZeroDivisionError("boom")


def test_an_output_that_would_not_parse_is_never_shown_or_written(
    folder: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (folder / "victim.py").write_text(SCRIPT)
    (folder / "other.py").write_text(SCRIPT)
    real = files.port_source
    # The files are ported as one program first; when that fails, each alone, so one bad
    # file stops nothing.
    monkeypatch.setattr(files, "port_sources", lambda *a, **k: 1 / 0)
    monkeypatch.setattr(
        files,
        "port_source",
        lambda s, p, *a: _broken_port(s, p) if "train" not in p else real(s, p, *a),
    )
    assert main(["port", "--write", str(folder)]) == 2
    out = capsys.readouterr().out
    assert f"{folder / 'victim.py'} was not ported: internal error in port for" in out
    assert "the ported text would not parse (invalid syntax, line 6); please report" in out
    assert f"internal error in port for {folder / 'other.py'} (ZeroDivisionError: boom)" in out
    assert (folder / "victim.py").read_text() == SCRIPT == (folder / "other.py").read_text()
    assert PORTED_LINE in (folder / "train.py").read_text()


@pytest.mark.parametrize(
    ("head", "encoding"),
    [(codecs.BOM_UTF8, "utf-8"), (b"# -*- coding: latin-1 -*-\n# caf\xe9\n", "latin-1")],
    ids=["utf-8 BOM", "PEP 263 latin-1"],
)
def test_a_file_keeps_its_encoding_and_bom_when_ported(
    folder: Path, head: bytes, encoding: str
) -> None:
    path = folder / "train.py"
    path.write_bytes(head + SCRIPT.encode(encoding))
    assert main(["port", "--write", str(path)]) == 0
    data = path.read_bytes()
    assert data.startswith(head)
    assert PORTED_LINE in data.decode(encoding)


NOTEBOOK_CELLS = [
    ("code", "%matplotlib inline\nimport torch\nimport torch.nn as nn", ["an output"]),
    ("markdown", "# Model", None),
    ("code", "files = !ls\nmodel = nn.Linear(3, 1)\nx = torch.randn(4, 3)\nx?", []),
]


def _write_notebook(path: Path) -> dict[str, object]:
    cells = []
    for kind, source, outputs in NOTEBOOK_CELLS:
        cell: dict[str, object] = {"cell_type": kind, "metadata": {}, "source": source}
        if outputs is not None:
            cell |= {"outputs": outputs, "execution_count": 1}
        cells.append(cell)
    data = {"cells": cells, "metadata": {"kernel": "k"}, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(data, indent=1) + "\n")
    return data


def test_a_notebook_is_ported_cell_by_cell_keeping_magics_and_outputs(tmp_path: Path) -> None:
    path = tmp_path / "n.ipynb"
    before = _write_notebook(path)
    assert main(["port", "--write", str(path)]) == 0
    after = json.loads(path.read_text())
    cells = after["cells"]
    assert [c["cell_type"] for c in cells] == ["code", "markdown", "code"]
    assert cells[0]["outputs"] == ["an output"] and after["metadata"] == before["metadata"]
    first, third = "".join(cells[0]["source"]), "".join(cells[2]["source"])
    assert first.startswith("%matplotlib inline\n") and "device = torch.device(" in first
    assert third.startswith("files = !ls\n") and third.endswith("x?")
    assert "model = nn.Linear(3, 1).to(device)" in third
    ported = path.read_text()
    assert main(["port", "--write", str(path)]) == 0
    assert path.read_text() == ported


def test_a_malformed_notebook_is_skipped_with_one_line(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (folder / "bad.ipynb").write_text('{"cells": "notalist"}')
    assert main(["port", str(folder)]) == 1
    out = capsys.readouterr().out
    assert f"{folder / 'bad.ipynb'} was not ported: not a Jupyter notebook" in out
    assert PORTED_LINE in out


def test_a_notebook_is_not_ported_with_distributed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write_notebook(tmp_path / "n.ipynb")
    assert main(["port", "--distributed", str(tmp_path / "n.ipynb")]) == 1
    assert "a notebook is not ported with --distributed" in capsys.readouterr().out


def test_write_refuses_read_only_files_and_hard_links_and_goes_through_symlinks(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (folder / "ro.py").write_text(SCRIPT)
    (folder / "ro.py").chmod(0o444)
    (folder / "linked.py").write_text(SCRIPT)
    os.link(folder / "linked.py", folder / "twin.txt")
    (folder / "sub").mkdir()
    (folder / "sub" / "alias.py").symlink_to(folder / "train.py")
    assert (
        main(
            [
                "port",
                "--write",
                str(folder / "sub"),
                str(folder / "ro.py"),
                str(folder / "linked.py"),
            ]
        )
        == 1
    )
    err = capsys.readouterr().err
    assert f"{folder / 'ro.py'}: read-only file; not written" in err
    assert f"{folder / 'linked.py'}: has 2 hard links; not written" in err
    assert (folder / "ro.py").read_text() == SCRIPT == (folder / "linked.py").read_text()
    assert (folder / "sub" / "alias.py").is_symlink()
    assert PORTED_LINE in (folder / "train.py").read_text()
