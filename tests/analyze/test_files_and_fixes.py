"""Notebooks, .gitignore matching, and the guarantees of --fix (parses, atomic, idempotent)."""

from __future__ import annotations

import ast
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from torchport.analyze import engine, runner
from torchport.analyze.checks import DETECTORS
from torchport.analyze.files import compile_pattern, discover, ignored
from torchport.config import Config
from torchport.findings import Edit, Fix, Safety
from torchport.rules.device import ToResultDiscarded


def _notebook(path: Path, cells: list[tuple[str, str]]) -> None:
    data = {
        "cells": [
            {"cell_type": kind, "metadata": {}, "source": src.splitlines(keepends=True)}
            | ({"outputs": [], "execution_count": None} if kind == "code" else {})
            for kind, src in cells
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def test_notebook_findings_name_cell_and_line_and_fixes_go_back_to_the_cell(
    tmp_path: Path,
) -> None:
    nb = tmp_path / "train.ipynb"
    _notebook(
        nb,
        [
            ("code", "%matplotlib inline\nimport torch"),
            ("markdown", "# Load"),
            ("code", "!nvidia-smi\nstate = torch.load('m.pt')"),
        ],
    )
    result = runner.check_file(nb, runner.Options(Config()))
    [finding] = [f for f in result.findings if f.code == "TP107"]
    assert finding.location is not None
    assert (finding.location.cell, finding.location.line) == (3, 2)
    fixed = runner.check_file(nb, runner.Options(Config(), fix=True, unsafe=True))
    assert [f.code for f in fixed.applied] == ["TP107"]
    cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
    assert (
        "".join(cells[2]["source"])
        == "!nvidia-smi\nstate = torch.load('m.pt', map_location=\"cpu\")"
    )
    assert "".join(cells[0]["source"]) == "%matplotlib inline\nimport torch"
    assert cells[1]["source"] == ["# Load"]


@pytest.mark.parametrize(
    ("pattern", "path", "is_dir", "expected"),
    [
        ("*.py", "a/b/c.py", False, True),
        ("/top.py", "top.py", False, True),
        ("/top.py", "sub/top.py", False, False),
        ("build/", "x/build", True, True),
        ("build/", "build", False, False),
        ("docs/**/*.py", "docs/a/b/c.py", False, True),
        ("data?.py", "data1.py", False, True),
        ("data[0-9].py", "datax.py", False, False),
    ],
)
def test_gitignore_patterns_follow_git_rules(
    tmp_path: Path, pattern: str, path: str, is_dir: bool, expected: bool
) -> None:
    compiled = compile_pattern(pattern, tmp_path)
    assert compiled is not None
    assert ignored([compiled], tmp_path / path, is_dir) is expected


def test_negated_pattern_re_includes_and_last_match_wins(tmp_path: Path) -> None:
    patterns = [p for p in (compile_pattern(x, tmp_path) for x in ("*.py", "!keep.py")) if p]
    assert ignored(patterns, tmp_path / "drop.py", False)
    assert not ignored(patterns, tmp_path / "keep.py", False)


def test_discover_skips_virtualenvs_and_caches(tmp_path: Path) -> None:
    for rel in ("a.py", ".venv/lib.py", "__pycache__/c.py", "pkg/b.ipynb", "pkg/notes.txt"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n", encoding="utf-8")
    found = {p.relative_to(tmp_path).as_posix() for p in discover([tmp_path], [])}
    assert found == {"a.py", "pkg/b.ipynb"}


def test_file_changed_on_disk_during_fix_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t.py"
    path.write_text("import torch\nx = torch.randn(3)\nx.cuda()\n", encoding="utf-8")
    real = runner.safe_write

    def racing_write(target: Path, data: bytes, **kwargs: Any) -> Path:
        target.write_text("# edited meanwhile\n", encoding="utf-8")
        return real(target, data, **kwargs)

    monkeypatch.setattr(runner, "safe_write", racing_write)
    result = runner.check_file(path, runner.Options(Config(), fix=True, unsafe=True))
    assert result.problem is not None and "changed on disk" in result.problem
    assert result.applied == []
    assert "TP101" in {f.code for f in result.findings}  # the finding whose fix did not land
    assert path.read_text(encoding="utf-8") == "# edited meanwhile\n"


def test_fix_that_would_not_parse_is_not_applied(monkeypatch: pytest.MonkeyPatch) -> None:
    def breaking(_analysis: object) -> list[object]:
        fix = Fix("break it", (Edit(1, 0, 1, 0, "def ("),), Safety.SAFE)
        return [ToResultDiscarded.finding("bad", None, fix)]

    monkeypatch.setitem(DETECTORS, "TP101", (ToResultDiscarded, breaking))
    outcome = engine.fix("x = 1\n", "t.py", {"TP101"}.__contains__)
    assert outcome.text == "x = 1\n"
    assert outcome.problem is not None and "would not parse" in outcome.problem


def _torch_sample(limit: int) -> list[Path]:
    """Installed torch sources that contain something our fixes touch (no torch import)."""
    spec = importlib.util.find_spec("torch")
    assert spec is not None and spec.origin is not None
    root = Path(spec.origin).parent
    markers = ("torch.load(", ".cuda(", "DataLoader(", "torch.cuda.amp", ".numpy()")
    picked = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        if any(m in text for m in markers):
            picked.append(path)
        if len(picked) == limit:
            break
    return picked


def test_unsafe_fixes_over_torch_sources_always_parse() -> None:
    sample = _torch_sample(40)
    assert len(sample) == 40
    changed = 0
    for path in sample:
        source = path.read_text(encoding="utf-8")
        outcome = engine.fix(source, str(path), DETECTORS.__contains__, unsafe=True)
        assert outcome.problem is None, (path, outcome.problem)
        ast.parse(outcome.text)
        changed += outcome.text != source
    assert changed > 0


def test_unreadable_file_is_reported_not_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "locked.py"
    path.write_text("import torch\n", encoding="utf-8")
    real = Path.read_bytes

    def refuse(self: Path) -> bytes:
        if self == path:
            raise PermissionError(13, "Permission denied")
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", refuse)
    result = runner.check_file(path, runner.Options(Config()))
    assert [f.code for f in result.findings] == ["TP100"]
    assert "cannot read: Permission denied" in result.findings[0].message
