"""Stages of the probe script, run in this process against fake tools and folders."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from torchport.doctor import _probe

SMI_CSV = (
    "0, NVIDIA A100-SXM4-80GB, 550.54.14, 81920, 8.0\n"
    "1, NVIDIA A100-SXM4-80GB, 550.54.14, 81920, 8.0\n"
)


def _fake_tool(folder: Path, name: str, script: str) -> None:
    tool = folder / name
    tool.write_text("#!/bin/sh\n" + script)
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)


@pytest.fixture
def bin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    return tmp_path


@pytest.mark.skipif(os.name != "posix", reason="fake tools are shell scripts")
def test_nvidia_smi_rows_become_driver_version_and_gpus(bin_dir: Path) -> None:
    _fake_tool(bin_dir, "nvidia-smi", f"printf '{SMI_CSV}'\n")
    smi = _probe._nvidia_smi()
    assert smi["version"] == "550.54.14"
    assert smi["gpus"][1] == {
        "index": 1,
        "name": "NVIDIA A100-SXM4-80GB",
        "memory_bytes": 81920 * 2**20,
        "capability": [8, 0],
    }


@pytest.mark.skipif(os.name != "posix", reason="fake tools are shell scripts")
def test_old_nvidia_smi_without_compute_cap_is_asked_again(bin_dir: Path) -> None:
    script = (
        'case "$1" in *compute_cap*) echo \'Field "compute_cap" is not a valid field\'; exit 2;; '
        "esac\nprintf '0, Tesla K80, 470.82.01, 11441\\n'\n"
    )
    _fake_tool(bin_dir, "nvidia-smi", script)
    smi = _probe._nvidia_smi()
    assert smi["version"] == "470.82.01"
    assert smi["gpus"][0]["capability"] is None


@pytest.mark.skipif(os.name != "posix", reason="fake tools are shell scripts")
def test_failing_nvidia_smi_reports_its_message(bin_dir: Path) -> None:
    _fake_tool(
        bin_dir,
        "nvidia-smi",
        "echo 'Failed to initialize NVML: Driver/library version mismatch'; exit 18\n",
    )
    assert _probe._nvidia_smi() == {
        "error": "Failed to initialize NVML: Driver/library version mismatch"
    }


def test_cuda_libraries_on_ld_library_path_are_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("libcudart.so.12", "libcublas.so.12", "libpng.so"):
        (tmp_path / name).write_text("")
    monkeypatch.setenv("LD_LIBRARY_PATH", f"{tmp_path}{os.pathsep}/nonexistent")
    assert _probe._cuda_libs_on_path() == [
        {"dir": str(tmp_path), "libs": ["libcublas.so.12", "libcudart.so.12"]}
    ]


def test_env_stage_reports_the_cuda_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    monkeypatch.delenv("CUDA_HOME", raising=False)
    env = _probe.probe_env()
    assert env["CUDA_VISIBLE_DEVICES"] == ""
    assert env["CUDA_HOME"] is None


def test_packages_stage_finds_this_torch_install() -> None:
    torch = _probe.probe_packages()["dists"]["torch"]
    assert len(torch) == 1
    assert torch[0]["version"] == _probe.metadata.version("torch")


def test_driver_stage_without_nvidia_reports_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_probe, "_nvml", lambda: {"error": "NVML Shared Library Not Found"})
    monkeypatch.setenv("PATH", "/nonexistent")
    assert _probe.probe_driver() == {
        "source": None,
        "nvml_error": "NVML Shared Library Not Found",
        "smi_error": "nvidia-smi is not on PATH",
        "gpus": [],
    }
