"""The GPU smoke test: its pure parts here, its CUDA run only where a GPU is present."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from torchport.doctor._smoke import (
    best_seconds,
    copy_bandwidth,
    gbps,
    matmul_check,
    pick_device,
    run_smoke,
)
from torchport.doctor.checks_host import check_smoke


def test_gbps_is_decimal_gigabytes_per_second() -> None:
    assert gbps(3_000_000_000, 1.5) == pytest.approx(2.0)
    assert gbps(1024, 0.0) == 0.0


@pytest.mark.parametrize(
    ("results", "device"),
    [
        ({"cuda": {"init_error": None, "device_count": 2}}, "cuda:0"),
        ({"cuda": {"init_error": "Found no NVIDIA driver", "device_count": 0}}, None),
        ({"cuda": {"init_error": "x"}, "mps": {"available": True}}, "mps"),
        ({"cuda": {"init_error": "x"}, "xpu": {"available": True}}, "xpu:0"),
        ({}, None),
    ],
)
def test_pick_device_takes_the_usable_accelerator(
    results: dict[str, Any], device: str | None
) -> None:
    assert pick_device(results) == device


def test_best_seconds_warms_up_once_and_syncs_after_every_run() -> None:
    calls: list[str] = []
    seconds = best_seconds(lambda: calls.append("work"), lambda: calls.append("sync"), repeats=3)
    assert calls == ["work", "sync"] * 4
    assert seconds >= 0.0


def test_matmul_check_on_cpu_matches_the_reference() -> None:
    result = matmul_check("cpu", size=32)
    assert result["correct"] is True
    assert result["max_relative_error"] < 1e-5


def test_copy_bandwidth_measures_pinned_memory_only_on_cuda() -> None:
    result = copy_bandwidth("cpu", nbytes=4096)
    assert result["pageable_gbps"] > 0
    assert "pinned_gbps" not in result


def test_run_smoke_without_an_accelerator_is_skipped() -> None:
    assert run_smoke({"cuda": {"init_error": "x"}}) == {"skipped": "no usable accelerator"}


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_smoke_failure_is_recorded_and_becomes_a_finding() -> None:
    smoke = run_smoke({}, device="cuda:0")
    assert "error" in smoke["matmul"] and "error" in smoke["h2d"]
    findings = check_smoke({"smoke": smoke})
    assert [f.code for f in findings] == ["TP533", "TP533"]


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_smoke_on_a_real_gpu_multiplies_correctly_and_measures_both_copies() -> None:
    smoke = run_smoke({"cuda": {"init_error": None, "device_count": 1}})
    assert smoke["device"] == "cuda:0"
    assert smoke["matmul"]["correct"] is True
    assert smoke["h2d"]["pageable_gbps"] > 0 and smoke["h2d"]["pinned_gbps"] > 0
    assert check_smoke({"smoke": smoke}) == []
