"""A local torch/ or torch.py is found without running it, reported, and the install probed."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest

from torchport.doctor._local import find_local_torch
from torchport.doctor.diagnose import diagnose
from torchport.doctor.probes import collect


def _booby_trap(path: Path, marker: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"open({str(marker)!r}, 'w').close()\n", encoding="utf-8")


def test_local_torch_folder_is_never_run_and_the_installed_torch_is_probed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran = tmp_path / "RAN"
    _booby_trap(tmp_path / "torch" / "__init__.py", ran)
    # Nothing else in the working directory runs either: the probe's own imports skip it.
    _booby_trap(tmp_path / "json.py", ran)
    monkeypatch.chdir(tmp_path)
    probe = collect(timeout=120.0, smoke=False)
    assert not ran.exists()
    assert probe["probe"]["status"] == "ok"
    # A CUDA build may say 2.13.0+cu130 where its metadata says 2.13.0: the public part agrees.
    public = probe["torch"]["version"].split("+")[0]
    assert public == importlib.metadata.version("torch").split("+")[0]
    assert probe["local_torch"]["shadowing"]["path"] == str(tmp_path / "torch")
    findings = diagnose(probe)
    assert [f.code for f in findings if f.code in ("TP531", "TP534")] == ["TP534"]
    assert str(tmp_path / "torch") in findings[0].message


def test_local_torch_module_file_on_sys_path_is_found(tmp_path: Path) -> None:
    (tmp_path / "torch.py").write_text("raise SystemExit('must not run')\n", encoding="utf-8")
    found = find_local_torch([str(tmp_path)], cwd="/elsewhere")
    assert found == [
        {
            "path": str(tmp_path / "torch.py"),
            "kind": "file",
            "entry": str(tmp_path),
            "on": "sys.path",
        }
    ]


def test_installed_torch_and_namespace_folders_are_not_local(tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text("", encoding="utf-8")
    (site / "torch-2.6.0.dist-info").mkdir()
    namespace = tmp_path / "work"
    (namespace / "torch").mkdir(parents=True)  # no __init__.py: the install still wins
    assert find_local_torch([str(namespace), str(site)], cwd=str(namespace)) == []
