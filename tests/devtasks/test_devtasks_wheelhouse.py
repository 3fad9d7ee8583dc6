"""dev.py wheelhouse: which wheels, for which Python and platform, with which pip command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import tomllib
from devtasks import wheelhouse

ROOT = Path(__file__).resolve().parents[2]


def _names(requirements: list[str]) -> set[str]:
    return {wheelhouse._name(r) for r in requirements}


def test_torch_and_the_gate_tools_are_left_out_and_the_runtime_and_build_kept() -> None:
    needed, optional = wheelhouse.requirements(ROOT, "3.12")
    names = _names(needed)
    assert not names & {"torch", "torchfix", "flake8", "ruff", "mypy", "import-linter"}
    assert {"rich", "libcst", "pytest", "nvidia-ml-py", "setuptools", "wheel"} <= names
    assert "rich==15.0.0" in needed  # the pins of requirements-dev.txt, not just the ranges
    assert optional == ["numpy==2.4.6"] and "numpy" not in names
    assert all(";" not in r for r in needed)


def test_markers_are_decided_for_the_target_python() -> None:
    assert "tomli" in _names(wheelhouse.requirements(ROOT, "3.10")[0])
    assert "tomli" not in _names(wheelhouse.requirements(ROOT, "3.12")[0])


def test_pyproject_arrays_are_read_as_tomllib_reads_them() -> None:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    data = tomllib.loads(text)
    assert (
        wheelhouse._toml_array(text, "project", "dependencies") == data["project"]["dependencies"]
    )
    assert (
        wheelhouse._toml_array(text, "build-system", "requires") == data["build-system"]["requires"]
    )


def test_a_manylinux_platform_brings_every_older_manylinux_with_it() -> None:
    tags = wheelhouse.platform_tags("manylinux_2_28_x86_64")
    assert tags[0] == "manylinux_2_28_x86_64"
    assert {"manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux1_x86_64"} <= set(tags)
    assert wheelhouse.platform_tags("macosx_11_0_arm64") == ["macosx_11_0_arm64"]


def test_download_is_binary_only_for_the_target_interpreter(tmp_path: Path) -> None:
    command = wheelhouse.download_command(
        ["pip"], tmp_path, "3.12", ["manylinux_2_28_aarch64"], ["rich==15.0.0"]
    )
    assert command[:2] == ["pip", "download"] and "--only-binary=:all:" in command
    assert command[command.index("--abi") + 1] == "cp312"
    assert command[command.index("--python-version") + 1] == "3.12"
    assert "manylinux2014_aarch64" in command and command[-1] == "rich==15.0.0"


@pytest.mark.parametrize("bad", [["--python-version", "312"], ["--frobnicate"]])
def test_bad_arguments_are_a_usage_error(bad: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "dev.py"), "wheelhouse", *bad],
        capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("python3 dev.py wheelhouse: error:")
