"""``check`` loses nothing: a fix that is not written keeps its finding and the exit code says
so; writes respect links, permissions and encodings; files it cannot read are never "clean"."""

from __future__ import annotations

import codecs
import json
import os
import stat
import tempfile
from pathlib import Path

import pytest

from torchport.cli import main

FIXABLE = "import torch\nx = torch.randn(3)\nx.cuda()\n"
FIXED = "import torch\nx = torch.randn(3)\nx = x.cuda()\n"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _fix(capsys: pytest.CaptureFixture[str], *paths: str) -> tuple[int, str, str]:
    code = main(["check", "--fix", "--unsafe-fixes", "--select", "TP101", *paths])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_fix_that_cannot_be_written_keeps_its_finding_and_exit_1(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # As in a read-only folder (the suite may run as root, where chmod does not stop writes).
    def denied(**_kwargs: object) -> tuple[int, str]:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", denied)
    (project / "t.py").write_text(FIXABLE)
    code, out, err = _fix(capsys, "t.py")
    assert code == 1
    assert "t.py:3:1: TP101" in out and "No findings" not in out
    assert "t.py: could not write the fixes: Permission denied" in err
    assert (project / "t.py").read_text() == FIXABLE


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes anywhere")
def test_a_read_only_folder_is_reported_not_hidden(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = project / "ro"
    folder.mkdir()
    (folder / "t.py").write_text(FIXABLE)
    folder.chmod(0o555)
    try:
        code, out, _ = _fix(capsys, "ro")
    finally:
        folder.chmod(0o755)
    assert code == 1 and "TP101" in out


def test_a_read_only_file_is_reported_and_not_overwritten(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = project / "t.py"
    path.write_text(FIXABLE)
    path.chmod(0o444)
    code, out, err = _fix(capsys, "t.py")
    assert (code, path.read_text()) == (1, FIXABLE)
    assert "TP101" in out and "t.py: read-only file; not written" in err


def test_a_symlink_is_written_through_and_stays_a_link(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "real.py").write_text(FIXABLE)
    (project / "link.py").symlink_to("real.py")
    code, _, err = _fix(capsys, "link.py")
    assert (project / "link.py").is_symlink()
    assert (project / "real.py").read_text() == FIXED
    assert code == 0 and err == ""


def test_a_symlink_to_a_file_outside_the_checked_tree_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = tmp_path / "outside.py"
    outside.write_text(FIXABLE)
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "link.py").symlink_to(outside)
    monkeypatch.chdir(tree)
    code, out, err = _fix(capsys, ".")
    assert outside.read_text() == FIXABLE and (tree / "link.py").is_symlink()
    assert code == 1 and "TP101" in out
    assert f"link.py: resolves to {outside}, outside the checked folders; not written" in err


def test_a_hard_linked_file_is_not_split(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "a.py").write_text(FIXABLE)
    os.link(project / "a.py", project / "b.py")
    code, _, err = _fix(capsys, "a.py")
    assert os.path.samefile(project / "a.py", project / "b.py")
    assert (project / "a.py").read_text() == FIXABLE
    assert code == 1 and "a.py: has 2 hard links; not written" in err


def test_a_fixed_file_keeps_its_mode(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = project / "t.py"
    path.write_text(FIXABLE)
    path.chmod(0o750)
    assert _fix(capsys, "t.py")[0] == 0
    assert (path.read_text(), stat.S_IMODE(path.stat().st_mode)) == (FIXED, 0o750)


@pytest.mark.parametrize(
    ("raw", "fixed"),
    [
        (codecs.BOM_UTF8 + FIXABLE.encode(), codecs.BOM_UTF8 + FIXED.encode()),
        (
            ("# coding: latin-1\n# caf\xe9\n" + FIXABLE).encode("latin-1"),
            ("# coding: latin-1\n# caf\xe9\n" + FIXED).encode("latin-1"),
        ),
    ],
    ids=["utf-8 BOM", "PEP 263 latin-1"],
)
def test_files_python_decodes_are_checked_and_fixed_in_their_own_encoding(
    project: Path, raw: bytes, fixed: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    path = project / "t.py"
    path.write_bytes(raw)
    assert main(["check", "--select", "TP100,TP101", "t.py"]) == 1
    assert "TP100" not in capsys.readouterr().out
    assert _fix(capsys, "t.py")[0] == 0
    assert path.read_bytes() == fixed


def test_an_unknown_encoding_declaration_is_tp100_naming_it(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "t.py").write_text("# coding: klingon\nx = 1\n")
    assert main(["check", "t.py"]) == 1
    assert "bad encoding declaration: unknown encoding: klingon" in capsys.readouterr().out


def test_unreadable_files_are_never_clean_even_when_tp100_is_not_selected(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "bad.py").write_text("def f(:\n")
    (project / "binary.py").write_bytes(b"\x00\x01\x02")
    assert main(["check", "bad.py", "binary.py", "--select", "TP101"]) == 1
    out, err = capsys.readouterr()
    assert "No findings" in out
    assert "bad.py: syntax error" in err and "binary.py: binary file" in err
    assert main(["check", "--exit-zero", "bad.py", "--select", "TP101"]) == 0


def _notebook(path: Path, cells: object) -> None:
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4}), "utf-8")


def _code(source: str) -> dict[str, object]:
    return {"cell_type": "code", "metadata": {}, "outputs": [], "source": source}


@pytest.mark.parametrize(
    "ipython",
    [
        "files = !ls",
        "x?",
        "torch.randn??",
        "?torch.load",
        "t = %timeit -o f()",
        "for i in range(2):\n    !echo {i}",
        "%%bash\necho hi\nfor (( ; ; ))",
    ],
)
def test_ipython_syntax_in_a_cell_is_opaque_not_unparsable(
    project: Path, ipython: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _notebook(project / "n.ipynb", [_code(ipython), _code(FIXABLE)])
    args = ["--select", "TP100,TP101", "--output-format", "json", "n.ipynb"]
    assert main(["check", *args]) == 1
    found = json.loads(capsys.readouterr().out)["findings"]
    assert [(f["code"], f["cell"], f["line"]) for f in found] == [("TP101", 2, 3)]


def test_a_percent_line_inside_brackets_is_python_not_a_magic(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _notebook(project / "n.ipynb", [_code("y = (7\n% 3)\nx = '''\n!not a shell\n'''\n")])
    assert main(["check", "n.ipynb"]) == 0, capsys.readouterr().out


def test_a_syntax_error_in_a_notebook_names_the_cell_and_its_line(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _notebook(project / "n.ipynb", [_code("import torch\n"), _code("x = 1\ndef f(:\n")])
    assert main(["check", "n.ipynb"]) == 1
    assert "n.ipynb:cell 2:2:1: TP100" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ('{"cells": "notalist"}', "'cells' is missing or not a list"),
        ("[1, 2]", "the JSON is not an object"),
        ('{"cells": [3]}', "cell 1 is not an object"),
        ('{"cells": [{"cell_type": "code", "source": 5}]}', "the source of cell 1 is not text"),
        ('{"cells": [', "not valid JSON"),
    ],
)
def test_a_malformed_notebook_is_one_line_and_not_clean(
    project: Path, content: str, why: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "n.ipynb").write_text(content)
    assert main(["check", "n.ipynb"]) == 1
    out = capsys.readouterr().out
    assert f"n.ipynb was not checked: not a Jupyter notebook: {why}" in out
    assert "No findings" not in out
