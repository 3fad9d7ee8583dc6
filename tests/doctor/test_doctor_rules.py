"""Every TP5xx diagnosis, with a fake probe that shows its symptom and one that does not."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from doctor_fakes import H100, codes, cpu_machine, edit, gpu_machine

from torchport.doctor.diagnose import diagnose
from torchport.doctor.verdict import summarize, verdict
from torchport.findings import Severity
from torchport.rules import all_rules

Probe = dict[str, Any]
RTX_5090 = {"index": 0, "name": "NVIDIA GeForce RTX 5090", "capability": [12, 0], "memory_bytes": 3}
TESLA_K80 = {"index": 0, "name": "Tesla K80", "capability": [3, 7], "memory_bytes": 12 * 2**30}


def _cpu_build_on_gpu_machine() -> Probe:
    probe = gpu_machine()
    probe["torch"].update(version="2.6.0+cpu", cuda=None, arch_list=[])
    probe["cuda"] = {"init_error": "Torch not compiled with CUDA enabled", "devices": []}
    return probe


def _init_error(text: str) -> Callable[[], Probe]:
    return lambda: edit(
        gpu_machine(), cuda__init_error=text, cuda__device_count=0, cuda__devices=[]
    )


def _dists(probe: Probe, name: str, *versions: str) -> Probe:
    probe["packages"]["dists"][name] = [
        {"version": v, "location": f"/site{i}", "installer": "pip"} for i, v in enumerate(versions)
    ]
    return probe


def _mac(machine: str, rosetta: bool, built: bool, available: bool, macos: str) -> Probe:
    probe = cpu_machine()
    probe["python"].update(system="Darwin", machine=machine, rosetta=rosetta, mac_ver=macos)
    probe["mps"] = {"built": built, "available": available}
    return probe


def _wsl(dxg: bool, libcuda: bool) -> Probe:
    probe = gpu_machine()
    probe["host"].update(wsl=True, dev_dxg=dxg, wsl_libcuda=libcuda, dev_nvidia=[], pci_gpus=[])
    return probe


def _ld(probe: Probe, folder: str, *libs: str) -> Probe:
    probe["host"]["cuda_libs_on_ld_library_path"] = [{"dir": folder, "libs": list(libs)}]
    return probe


def _container_without_devices(probe: Probe) -> Probe:
    return edit(
        probe, host__container="docker", host__dev_nvidia=[], host__proc_driver_version=None
    )


def _probe_status(status: str, stage: str, returncode: int) -> Probe:
    return edit(
        gpu_machine(),
        probe__status=status,
        probe__unfinished_stage=stage,
        probe__returncode=returncode,
        probe__stderr_tail="Segmentation fault",
    )


_LOCAL_TORCH = {"path": "/w/torch", "kind": "folder", "entry": "/w", "on": "working directory"}

# (code, probe with the symptom, text the message or fix must contain)
POSITIVE: list[tuple[str, Callable[[], Probe], str]] = [
    ("TP501", _cpu_build_on_gpu_machine, "--index-url https://download.pytorch.org/whl/cu126"),
    ("TP502", lambda: edit(gpu_machine(), driver__version="470.82.01"), "525.60.13"),
    (
        "TP502",
        lambda: edit(
            _init_error("The NVIDIA driver on your system is too old (found version 11040).")(),
            driver__version=None,
            host__proc_driver_version=None,
        ),
        "supports CUDA 11.4 only",
    ),
    ("TP503", lambda: edit(gpu_machine(), driver__version="535.104.05"), "560.28.03"),
    ("TP504", lambda: edit(gpu_machine(), cuda__devices=[RTX_5090]), "sm_120"),
    ("TP505", lambda: edit(gpu_machine(), cuda__devices=[TESLA_K80]), "TORCH_CUDA_ARCH_LIST=3.7"),
    ("TP505", lambda: edit(_cpu_build_on_gpu_machine(), driver__gpus=[TESLA_K80]), "sm_37"),
    (
        "TP506",
        lambda: edit(gpu_machine(), env__CUDA_VISIBLE_DEVICES=""),
        "unset CUDA_VISIBLE_DEVICES",
    ),
    ("TP506", lambda: edit(gpu_machine(), env__CUDA_VISIBLE_DEVICES="-1,0"), "'-1,0'"),
    ("TP506", lambda: edit(gpu_machine(), env__CUDA_VISIBLE_DEVICES="3"), "1 GPU present"),
    ("TP507", lambda: _container_without_devices(gpu_machine()), "--gpus all"),
    ("TP508", lambda: _wsl(dxg=False, libcuda=False), "/dev/dxg"),
    (
        "TP509",
        lambda: _ld(_wsl(True, True), "/usr/local/cuda/lib64/stubs", "libcuda.so"),
        "shadows",
    ),
    (
        "TP510",
        lambda: edit(
            gpu_machine(),
            driver__nvml_error="Driver/library version mismatch",
            driver__version=None,
        ),
        "Reboot",
    ),
    ("TP510", lambda: edit(gpu_machine(), driver__version="560.28.03"), "kernel module 560.35.03"),
    (
        "TP511",
        lambda: edit(gpu_machine(), host__dev_nvidia=["nvidia0", "nvidiactl"]),
        "modprobe nvidia-uvm",
    ),
    (
        "TP512",
        _init_error("Found no NVIDIA driver on your system. Please check ..."),
        "ubuntu-drivers",
    ),
    (
        "TP512",
        lambda: edit(
            _cpu_build_on_gpu_machine(),
            host__dev_nvidia=[],
            host__proc_driver_version=None,
            driver__version=None,
            driver__gpus=[],
        ),
        "no NVIDIA kernel driver is loaded",
    ),
    (
        "TP513",
        _init_error("CUDA unknown error - this may be due to an incorrectly set up environment"),
        "nvidia_uvm",
    ),
    (
        "TP514",
        _init_error(
            "Unexpected error from cudaGetDeviceCount(). Error 802: system not yet initialized"
        ),
        "nvidia-fabricmanager",
    ),
    (
        "TP515",
        _init_error("Error 803: system has unsupported display driver / cuda driver combination"),
        "cuda-compat",
    ),
    (
        "TP516",
        _init_error("Error 804: forward compatibility was attempted on non supported HW"),
        "cuda-compat",
    ),
    (
        "TP517",
        _init_error("CUDA error: all CUDA-capable devices are busy or unavailable"),
        "nvidia-smi -c DEFAULT",
    ),
    ("TP518", _init_error("CUDA error: out of memory"), "out of memory"),
    (
        "TP519",
        lambda: _ld(
            gpu_machine(), "/usr/local/cuda-11.8/lib64", "libcudart.so.11.0", "libcublas.so.11"
        ),
        "libcudart.so.11.0",
    ),
    (
        "TP519",
        lambda: _ld(gpu_machine(), "/usr/local/cuda/compat", "libcuda.so.1"),
        "/usr/local/cuda/compat",
    ),
    (
        "TP520",
        lambda: _dists(gpu_machine(), "torch", "2.6.0+cu126", "2.1.0"),
        "pip uninstall -y torch",
    ),
    (
        "TP521",
        lambda: edit(gpu_machine(), packages__conda_torch=["pytorch-2.3.0-py3.11_cuda12.1_0.json"]),
        "conda remove",
    ),
    (
        "TP522",
        lambda: edit(gpu_machine(), torch__version="2.2.2+cu121", torch__cuda="12.1"),
        "numpy<2",
    ),
    ("TP523", lambda: _dists(gpu_machine(), "torchvision", "0.21.0+cu124"), "whl/cu126"),
    ("TP523", lambda: _dists(gpu_machine(), "torchaudio", "2.6.0+cpu"), "torchaudio"),
    ("TP524", lambda: _dists(gpu_machine(), "torchvision", "0.20.1"), "torchvision 0.21"),
    (
        "TP525",
        lambda: _mac("x86_64", rosetta=True, built=False, available=False, macos="14.5"),
        "Rosetta",
    ),
    (
        "TP526",
        lambda: _mac("arm64", rosetta=False, built=True, available=False, macos="12.1"),
        "12.3",
    ),
    ("TP527", lambda: edit(cpu_machine(), torch__xpu_compiled=True), "intel-level-zero-gpu"),
    ("TP528", lambda: edit(gpu_machine(), host__shm_bytes=64 * 2**20), "--shm-size"),
    ("TP529", gpu_machine, 'set_float32_matmul_precision("high")'),
    ("TP530", lambda: _probe_status("timeout", "cuda", -9), "hung in CUDA initialisation"),
    ("TP531", lambda: _probe_status("crashed", "torch", -11), "-11 in `import torch`: Segm"),
    ("TP531", lambda: edit(gpu_machine(), cuda={"error": "RuntimeError: CUDA error: ECC"}), "ECC"),
    (
        "TP532",
        lambda: {**cpu_machine(), "torch": {"import_error": "OSError: libcudnn.so.9: cannot open"}},
        "libcudnn",
    ),
    (
        "TP532",
        lambda: {
            **cpu_machine(),
            "torch": {"import_error": "ModuleNotFoundError: No module named 'torch'"},
        },
        "torch is not installed in this Python environment",
    ),
    (
        "TP533",
        lambda: edit(
            gpu_machine(), smoke__matmul={"error": "RuntimeError: no kernel image is available"}
        ),
        "no kernel image",
    ),
    (
        "TP533",
        lambda: edit(gpu_machine(), smoke__matmul={"correct": False, "max_relative_error": 3.0}),
        "differs",
    ),
    ("TP534", lambda: edit(cpu_machine(), local_torch__shadowing=_LOCAL_TORCH), "Rename /w/torch"),
    (
        "TP534",
        lambda: edit(
            gpu_machine(),
            local_torch__shadowing={**_LOCAL_TORCH, "on": "sys.path", "kind": "file"},
        ),
        "loads the file /w/torch on sys.path (/w)",
    ),
]

# (code, a probe close to its symptom that must not trigger it)
NEGATIVE: list[tuple[str, Callable[[], Probe]]] = [
    ("TP501", cpu_machine),
    ("TP502", gpu_machine),
    ("TP503", gpu_machine),
    ("TP504", lambda: edit(gpu_machine(), cuda__devices=[{**RTX_5090, "capability": [8, 6]}])),
    (
        "TP504",
        lambda: edit(
            gpu_machine(), torch__arch_list=["sm_90", "compute_90"], cuda__devices=[RTX_5090]
        ),
    ),
    ("TP505", lambda: edit(gpu_machine(), cuda__devices=[{**TESLA_K80, "capability": [5, 0]}])),
    ("TP506", lambda: edit(gpu_machine(), env__CUDA_VISIBLE_DEVICES="0")),
    ("TP506", lambda: edit(gpu_machine(), env__CUDA_VISIBLE_DEVICES="GPU-8f6c0c1e")),
    ("TP506", lambda: edit(cpu_machine(), env__CUDA_VISIBLE_DEVICES="")),
    ("TP507", cpu_machine),
    ("TP507", lambda: edit(gpu_machine(), host__container="docker")),
    ("TP508", lambda: _wsl(dxg=True, libcuda=True)),
    ("TP509", lambda: _ld(_wsl(True, True), "/usr/lib/wsl/lib", "libcuda.so.1")),
    ("TP510", gpu_machine),
    ("TP511", lambda: _wsl(dxg=True, libcuda=True)),
    (
        "TP512",
        lambda: edit(
            cpu_machine(),
            torch__cuda="12.6",
            cuda__init_error="Found no NVIDIA driver on your system.",
        ),
    ),
    ("TP513", cpu_machine),
    ("TP514", _init_error("CUDA error: out of memory")),
    ("TP515", _init_error("CUDA error: out of memory")),
    ("TP516", _init_error("CUDA error: out of memory")),
    ("TP517", _init_error("CUDA error: out of memory")),
    ("TP518", cpu_machine),
    ("TP518", _init_error("Error 804: forward compatibility was attempted on non supported HW")),
    ("TP519", lambda: _ld(gpu_machine(), "/usr/lib/x86_64-linux-gnu", "libcuda.so.1")),
    ("TP519", lambda: _ld(cpu_machine(), "/usr/local/cuda-11.8/lib64", "libcudart.so.11.0")),
    ("TP520", gpu_machine),
    (
        "TP521",
        lambda: edit(
            gpu_machine(),
            packages__dists__torch=[{"version": "2.3.0", "installer": "conda"}],
            packages__conda_torch=["pytorch-2.3.0-py3.11_cuda12.1_0.json"],
        ),
    ),
    ("TP522", lambda: edit(gpu_machine(), torch__version="2.3.0+cu121")),
    ("TP522", lambda: _dists(edit(gpu_machine(), torch__version="2.2.2"), "numpy", "1.26.4")),
    ("TP523", lambda: _dists(gpu_machine(), "torchvision", "0.21.0+cu126")),
    ("TP523", lambda: _dists(gpu_machine(), "torchvision", "0.21.0")),
    ("TP524", lambda: _dists(gpu_machine(), "torchvision", "0.21.0+cu126")),
    ("TP525", lambda: _mac("x86_64", rosetta=False, built=False, available=False, macos="13.0")),
    ("TP526", lambda: _mac("arm64", rosetta=False, built=True, available=True, macos="14.5")),
    ("TP527", cpu_machine),
    ("TP528", lambda: edit(cpu_machine(), host__shm_bytes=8 * 2**30)),
    ("TP529", lambda: edit(gpu_machine(), torch__matmul_precision="high")),
    (
        "TP529",
        lambda: edit(
            gpu_machine(), cuda__devices=[{**H100, "name": "Tesla T4", "capability": [7, 5]}]
        ),
    ),
    ("TP530", gpu_machine),
    ("TP531", gpu_machine),
    ("TP532", gpu_machine),
    ("TP533", gpu_machine),
    ("TP534", cpu_machine),
    # A local torch later on the path than the installed one shadows nothing.
    (
        "TP534",
        lambda: edit(cpu_machine(), local_torch={"shadowing": None, "local": [_LOCAL_TORCH]}),
    ),
]


def _text(finding: Any) -> str:
    return f"{finding.message} {finding.fix.title if finding.fix else ''}"


@pytest.mark.parametrize(("code", "make", "expected"), POSITIVE, ids=[c for c, *_ in POSITIVE])
def test_diagnosis_fires_on_its_symptom_with_a_fix(
    code: str, make: Callable[[], Probe], expected: str
) -> None:
    hits = [f for f in diagnose(make()) if f.code == code]
    assert hits, f"{code} not found"
    assert hits[0].fix is not None and hits[0].fix.title
    assert expected in _text(hits[0])


@pytest.mark.parametrize(("code", "make"), NEGATIVE, ids=[c for c, _ in NEGATIVE])
def test_diagnosis_stays_quiet_without_its_symptom(code: str, make: Callable[[], Probe]) -> None:
    assert code not in codes(diagnose(make()))


def test_every_environment_rule_has_positive_and_negative_cases() -> None:
    registered = {r.code for r in all_rules() if r.code.startswith("TP5")}
    assert len(registered) >= 20
    assert {c for c, *_ in POSITIVE} == registered
    assert {c for c, _ in NEGATIVE} == registered


def test_healthy_gpu_machine_gets_only_the_tf32_note() -> None:
    findings = diagnose(gpu_machine())
    assert [(f.code, f.severity) for f in findings] == [("TP529", Severity.INFO)]


def test_gpu_less_machine_with_cpu_torch_gets_no_findings() -> None:
    assert diagnose(cpu_machine()) == []


def test_default_cuda_wheel_in_gpu_less_container_is_only_a_hint() -> None:
    probe = edit(cpu_machine(), torch__cuda="12.6", torch__version="2.6.0")
    probe["cuda"]["init_error"] = "Found no NVIDIA driver on your system."
    findings = diagnose(probe)
    assert codes(findings) == ["TP507"]
    assert findings[0].severity is Severity.INFO


def test_small_shm_is_a_hint_only_without_a_gpu() -> None:
    gpu = diagnose(edit(gpu_machine(), host__shm_bytes=2**26))
    cpu = diagnose(edit(cpu_machine(), host__shm_bytes=2**26))
    assert [f.severity for f in gpu if f.code == "TP528"] == [Severity.WARNING]
    assert [f.severity for f in cpu if f.code == "TP528"] == [Severity.INFO]


def test_cpu_only_build_fix_removes_conda_cpuonly_first() -> None:
    probe = edit(_cpu_build_on_gpu_machine(), packages__conda_torch=["cpuonly-2.0-0.json"])
    fix = next(f.fix for f in diagnose(probe) if f.code == "TP501")
    assert fix is not None and fix.title.startswith("Run `conda remove cpuonly pytorch`")


def test_cpu_only_build_fix_reinstalls_companions_from_the_same_index() -> None:
    probe = _dists(_cpu_build_on_gpu_machine(), "torchvision", "0.21.0+cpu")
    fix = next(f.fix for f in diagnose(probe) if f.code == "TP501")
    assert fix is not None and "torch torchvision --index-url" in fix.title


@pytest.mark.parametrize(
    "probe",
    [
        {},
        {"torch": "garbage", "cuda": [1], "host": {"pci_gpus": "x", "dev_nvidia": 3}},
        {stage: None for stage in ("python", "env", "host", "packages", "driver", "torch", "cuda")},
        {"driver": {"gpus": [{"capability": "9.0"}, 5]}, "torch": {"version": 2, "arch_list": [1]}},
        {
            "cuda": {"devices": [None, "x"]},
            "smoke": {"device": "cuda:0", "matmul": {"tflops": "x"}},
        },
    ],
)
def test_diagnosis_and_report_tolerate_malformed_probe_values(probe: Probe) -> None:
    findings = diagnose(probe)
    assert all(f.code.startswith("TP5") for f in findings)
    assert summarize(probe, findings)["accelerator"] == "cpu"
    assert verdict(probe, findings).startswith(("GPU not usable: ", "No accelerator found"))


def test_driver_too_old_error_recommends_a_wheel_that_driver_runs() -> None:
    probe = edit(
        gpu_machine(),
        cuda__init_error="The NVIDIA driver on your system is too old (found version 11040).",
        driver__version=None,
        host__proc_driver_version=None,
    )
    fix = next(f.fix for f in diagnose(probe) if f.code == "TP502")
    assert fix is not None and fix.title.endswith("whl/cu118`.")


def test_old_driver_gets_the_newest_wheel_it_can_run() -> None:
    fix = next(f.fix for f in diagnose(edit(gpu_machine(), driver__version="470.82.01")))
    assert fix is not None and "Upgrade the driver to 560.28.03" in fix.title
    assert fix.title.endswith("whl/cu118`.")


def test_probe_stage_that_raised_is_a_warning_naming_the_stage() -> None:
    findings = diagnose(edit(cpu_machine(), mps={"error": "OSError: Metal"}))
    assert [(f.code, f.severity) for f in findings] == [("TP531", Severity.WARNING)]
    assert findings[0].message == "The environment probe failed while checking MPS: OSError: Metal"


def test_driver_too_old_for_every_wheel_is_told_only_to_upgrade() -> None:
    probe = edit(gpu_machine(), driver__version="418.67")
    fix = next(f.fix for f in diagnose(probe) if f.code == "TP502")
    assert fix is not None and fix.title == "Upgrade the driver to 560.28.03 or newer and reboot."
