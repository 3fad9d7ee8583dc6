"""benchmarks/gpu_overhead.py: the GPU overhead benchmark of issue 12, exercised on the CPU."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_overhead.py"
WORKLOADS = ("mlp", "transformer", "resnet18", "loader")


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_overhead", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, str(SCRIPT), *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


@pytest.mark.slow
def test_cpu_run_prints_an_observe_over_plain_ratio_for_each_of_the_four_workloads() -> None:
    done = _run("--device", "cpu", "--repeats", "1", "--steps", "2", "--warm-up", "1")
    assert done.returncode == 0, done.stderr
    for kind in WORKLOADS:
        line = re.search(rf"^{kind} .*ratio (\d+\.\d+)x \(goal <= 1\.2x: (ok|ABOVE GOAL)\)$",
                         done.stdout, re.MULTILINE)  # fmt: skip
        assert line is not None, done.stdout
        assert float(line.group(1)) > 0
    assert re.search(r"^all within 1\.2x: (yes|no)$", done.stdout, re.MULTILINE)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal without CUDA")
def test_without_cuda_it_exits_2_with_one_line_unless_the_cpu_is_asked_for() -> None:
    done = _run("--steps", "1")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "gpu_overhead: CUDA is not available (use --device cpu to check the harness)"
    ]


def test_resnet18_has_the_parameter_count_of_resnet18_for_32px_images() -> None:
    # The CIFAR-style ResNet-18 (3x3 stem, 10 classes) has 11,173,962 parameters.
    model = _load().resnet18(64)
    assert sum(p.numel() for p in model.parameters()) == 11_173_962


def test_each_workload_trains_on_the_cpu_and_returns_its_loop_time() -> None:
    module = _load()
    for kind in WORKLOADS:
        seconds = module.workload(kind, 2, torch.device("cpu"), warm_up=1)
        assert seconds > 0
