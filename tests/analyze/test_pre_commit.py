"""The pre-commit hooks call a command that works with and without file arguments."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import yaml

from torchport.cli import main

HOOKS = Path(__file__).resolve().parents[2] / ".pre-commit-hooks.yaml"


def _hooks() -> list[dict[str, object]]:
    hooks = yaml.safe_load(HOOKS.read_text(encoding="utf-8"))
    assert isinstance(hooks, list)
    return hooks


def test_hooks_run_torchport_check_on_python_and_notebooks() -> None:
    ids = {h["id"] for h in _hooks()}
    assert ids == {"torchport-check", "torchport-fix"}
    for hook in _hooks():
        assert str(hook["entry"]).startswith("torchport check")
        assert hook["types_or"] == ["python", "jupyter"]


@pytest.mark.parametrize("with_files", [False, True])
def test_hook_entry_works_with_no_files_and_with_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, with_files: bool
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ok.py").write_text("import torch\n", encoding="utf-8")
    (tmp_path / "bad.py").write_text("import torch\nx = torch.load('m')\n", encoding="utf-8")
    for hook in _hooks():
        argv = shlex.split(str(hook["entry"]))[1:] + (["ok.py"] if with_files else [])
        code = main(argv)
        assert code == (0 if with_files else 1)
