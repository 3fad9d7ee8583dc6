"""The one-line verdict, --require, and the facts the report shows."""

from __future__ import annotations

import pytest
from doctor_fakes import H100, cpu_machine, edit, gpu_machine

from torchport.doctor.diagnose import diagnose
from torchport.doctor.verdict import CPU_VERDICT, requirement_met, summarize, usable, verdict


def _verdict(probe: dict[str, object]) -> str:
    return verdict(probe, diagnose(probe))


def test_gpu_less_machine_gets_the_calm_cpu_verdict() -> None:
    assert _verdict(cpu_machine()) == CPU_VERDICT


def test_healthy_gpu_is_usable_and_named() -> None:
    assert _verdict(gpu_machine()) == "GPU usable: NVIDIA H100 80GB HBM3 (cuda:0)"


def test_every_usable_gpu_is_named() -> None:
    second = {**H100, "index": 1}
    probe = edit(gpu_machine(), cuda__devices=[H100, second], cuda__device_count=2)
    assert _verdict(probe).endswith("(cuda:0), NVIDIA H100 80GB HBM3 (cuda:1)")


def test_cpu_only_build_on_a_gpu_machine_gives_the_reason() -> None:
    probe = edit(gpu_machine(), torch__cuda=None, torch__version="2.6.0+cpu")
    probe["cuda"] = {"init_error": "Torch not compiled with CUDA enabled", "devices": []}
    assert _verdict(probe).startswith("GPU not usable: torch 2.6.0+cpu is a CPU-only build")


def test_gpu_missing_from_the_wheel_arch_list_is_not_usable_although_cuda_starts() -> None:
    probe = edit(gpu_machine(), cuda__devices=[{**H100, "capability": [12, 0]}], smoke={})
    assert _verdict(probe).startswith("GPU not usable: NVIDIA H100 80GB HBM3 (compute capability")


def test_failed_smoke_test_makes_the_gpu_not_usable() -> None:
    probe = edit(gpu_machine(), smoke__matmul={"error": "RuntimeError: CUDA error: ECC"})
    assert _verdict(probe).startswith("GPU not usable: The smoke test failed on cuda:0")


def test_probe_timeout_leads_the_verdict_before_other_errors() -> None:
    probe = edit(gpu_machine(), torch__cuda=None, torch__version="2.6.0+cpu", cuda={})
    probe = edit(probe, probe__status="timeout", probe__unfinished_stage="mps")
    assert {"TP501", "TP530"} <= {f.code for f in diagnose(probe)}
    assert _verdict(probe).startswith("GPU not usable: The environment probe did not finish")


def test_apple_silicon_with_mps_is_usable() -> None:
    probe = edit(cpu_machine(), python__system="Darwin", python__machine="arm64")
    probe["mps"] = {"built": True, "available": True}
    assert _verdict(probe) == "GPU usable: Apple MPS (mps)"


def test_warning_on_a_machine_with_an_accelerator_explains_why_it_is_unused() -> None:
    probe = edit(cpu_machine(), python__system="Darwin", python__machine="arm64")
    probe["mps"] = {"built": True, "available": False}
    assert _verdict(probe).startswith("GPU not usable: torch is built with MPS")


def test_warning_alone_on_a_gpu_less_machine_keeps_the_cpu_verdict() -> None:
    probe = cpu_machine()
    probe["packages"]["dists"]["torch"].append({"version": "2.1.0", "location": "/other"})
    findings = diagnose(probe)
    assert [f.code for f in findings] == ["TP520"]
    assert verdict(probe, findings) == CPU_VERDICT


@pytest.mark.parametrize(
    ("required", "on_gpu", "on_cpu"),
    [("cuda", True, False), ("any", True, False), ("mps", False, False), ("xpu", False, False)],
)
def test_requirement_met(required: str, on_gpu: bool, on_cpu: bool) -> None:
    gpu, cpu = gpu_machine(), cpu_machine()
    assert requirement_met(required, gpu, diagnose(gpu)) is on_gpu
    assert requirement_met(required, cpu, diagnose(cpu)) is on_cpu


def test_usable_lists_xpu_devices() -> None:
    probe = edit(cpu_machine(), xpu__available=True, xpu__devices=["Intel Arc A770"])
    assert usable(probe, diagnose(probe)) == {"xpu": ["Intel Arc A770 (xpu:0)"]}


def test_facts_show_torch_wheel_driver_gpus_accelerator_and_smoke() -> None:
    probe = gpu_machine()
    facts = summarize(probe, diagnose(probe))
    assert facts["torch"] == "2.6.0+cu126"
    assert facts["torch_build"] == "CUDA 12.6"
    assert facts["cuda_runtime_of_wheel"] == "12.6"
    assert facts["driver"] == "560.35.03"
    assert facts["accelerator"] == "cuda"
    assert facts["gpus"] == [
        {
            "index": 0,
            "name": "NVIDIA H100 80GB HBM3",
            "compute_capability": "9.0",
            "memory": "79.2 GiB",
            "supported_by_wheel": True,
        }
    ]
    assert facts["smoke_test"] == {
        "device": "cuda:0",
        "matmul_fp32_tflops": 45.0,
        "matmul_correct": True,
        "h2d_pageable_gb_per_s": 12.0,
        "h2d_pinned_gb_per_s": 25.0,
    }


def test_facts_of_a_cpu_machine_say_cpu_only_and_no_gpus() -> None:
    facts = summarize(cpu_machine(), [])
    assert (facts["torch_build"], facts["accelerator"], facts["gpus"]) == ("CPU-only", "cpu", [])
    assert "smoke_test" not in facts


def test_integrated_amd_or_intel_graphics_keep_the_cpu_verdict() -> None:
    probe = cpu_machine()
    probe["host"]["pci_gpus"] = [
        {"slot": "0000:00:02.0", "vendor": "intel", "device": "0x9a49"},
        {"slot": "0000:05:00.0", "vendor": "amd", "device": "0x1638"},
    ]
    assert _verdict(probe) == CPU_VERDICT
