"""The pytest plugin observes tests only when asked, and fails them only under strict."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = """\
import numpy as np
import torch
from torch import nn


def test_promotes():
    torch.ones(3) * torch.from_numpy(np.ones(3))


def test_integer_input():
    try:
        nn.Linear(2, 1)(torch.ones(1, 2, dtype=torch.int64))
    except RuntimeError:
        pass


def test_clean():
    torch.ones(3) * 2
"""


# Only torchport's plugin, loaded through its pytest11 entry point: other plugins installed
# on the machine (a GPU image's pytest-benchmark, say) cannot change what these runs report.
ONLY_OURS = ["-p", "torchport", "-p", "no:cacheprovider"]
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


def _pytest(tmp_path: Path, *options: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_sample.py").write_text(TESTS, encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "pytest", *ONLY_OURS, "-q", *options, str(tmp_path)],
        capture_output=True, text=True, cwd=tmp_path, env=ENV, check=False,
    )  # fmt: skip


def test_plugin_reports_findings_per_test_and_stays_off_by_default(tmp_path: Path) -> None:
    off = _pytest(tmp_path)
    on = _pytest(tmp_path, "--torchport")
    assert off.returncode == on.returncode == 0, on.stdout + on.stderr
    assert "TP350" not in off.stdout
    assert "test_sample.py::test_promotes" in on.stdout
    assert "TP350" in on.stdout and "TP303" in on.stdout
    assert "test_sample.py::test_clean" not in on.stdout


def test_strict_plugin_fails_only_tests_with_error_findings(tmp_path: Path) -> None:
    strict = _pytest(tmp_path, "--torchport-strict")
    assert strict.returncode == 1
    assert "1 failed, 2 passed" in strict.stdout
    assert "FAILED test_sample.py::test_integer_input" in strict.stdout


def test_plugin_can_run_each_test_on_a_simulated_gpu(tmp_path: Path) -> None:
    (tmp_path / "test_gpu.py").write_text(
        "import torch\n\n\ndef test_gpu():\n"
        "    assert torch.ones(1, device='cuda').device.type == 'cuda'\n",
        encoding="utf-8",
    )
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *ONLY_OURS,
         "-q", "--torchport", "--torchport-simulate", "cuda", str(tmp_path / "test_gpu.py")],
        capture_output=True, text=True, cwd=tmp_path, env=ENV, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
