"""Fake probe dicts for the doctor's tests: a healthy GPU machine, a GPU-less one, and edits."""

from __future__ import annotations

import copy
from typing import Any

H100 = {
    "index": 0,
    "name": "NVIDIA H100 80GB HBM3",
    "capability": [9, 0],
    "memory_bytes": 85_000_000_000,
    "multiprocessors": 132,
}
ARCH_LIST_CU126 = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]

_GPU_MACHINE: dict[str, Any] = {
    "python": {
        "version": "3.11.7",
        "executable": "/usr/bin/python3",
        "prefix": "/usr",
        "system": "Linux",
        "platform": "Linux-6.8.0-x86_64-with-glibc2.39",
        "machine": "x86_64",
        "mac_ver": None,
        "rosetta": None,
    },
    "env": {"CUDA_VISIBLE_DEVICES": None, "NVIDIA_VISIBLE_DEVICES": None, "ZE_AFFINITY_MASK": None},
    "host": {
        "dev_nvidia": ["nvidia-uvm", "nvidia-uvm-tools", "nvidia0", "nvidiactl"],
        "dev_dxg": False,
        "proc_driver_version": (
            "NVRM version: NVIDIA UNIX x86_64 Kernel Module  560.35.03  Fri Aug 16 2024"
        ),
        "wsl": False,
        "wsl_libcuda": False,
        "container": None,
        "shm_bytes": 64 * 2**30,
        "pci_gpus": [{"slot": "0000:17:00.0", "vendor": "nvidia", "device": "0x2330"}],
        "cuda_libs_on_ld_library_path": [],
    },
    "packages": {
        "dists": {
            "torch": [
                {"version": "2.6.0+cu126", "location": "/venv/site-packages", "installer": "pip"}
            ],
            "numpy": [{"version": "2.1.3", "location": "/venv/site-packages", "installer": "pip"}],
            "torchvision": [],
            "torchaudio": [],
        },
        "conda_env": False,
        "conda_torch": [],
    },
    "driver": {
        "source": "nvml",
        "version": "560.35.03",
        "cuda_driver_version": 12060,
        "gpus": [
            {
                "index": 0,
                "name": H100["name"],
                "memory_bytes": H100["memory_bytes"],
                "capability": [9, 0],
            }
        ],
    },
    "torch": {
        "version": "2.6.0+cu126",
        "file": "/venv/site-packages/torch/__init__.py",
        "cuda": "12.6",
        "hip": None,
        "arch_list": ARCH_LIST_CU126,
        "xpu_compiled": False,
        "matmul_precision": "highest",
        "cudnn": 90501,
    },
    "cuda": {"init_error": None, "warnings": [], "device_count": 1, "devices": [H100]},
    "mps": {"built": False, "available": False},
    "xpu": {"present": True, "available": False, "device_count": 0, "devices": []},
    "smoke": {
        "device": "cuda:0",
        "matmul": {"size": 2048, "max_relative_error": 1e-6, "correct": True, "tflops": 45.0},
        "h2d": {"bytes": 2**26, "pageable_gbps": 12.0, "pinned_gbps": 25.0},
    },
    "probe": {"status": "ok", "timeout_s": 60.0, "unfinished_stage": None, "returncode": 0},
}


def gpu_machine() -> dict[str, Any]:
    """A healthy Linux box: H100, driver 560.35.03, torch 2.6.0+cu126."""
    return copy.deepcopy(_GPU_MACHINE)


def cpu_machine() -> dict[str, Any]:
    """A GPU-less Linux box with a CPU-only torch (like the CI machine)."""
    probe = gpu_machine()
    probe["host"].update(dev_nvidia=[], proc_driver_version=None, pci_gpus=[], container="docker")
    probe["driver"] = {"source": None, "nvml_error": "NVML Shared Library Not Found", "gpus": []}
    probe["torch"].update(version="2.6.0+cpu", cuda=None, arch_list=[], cudnn=None)
    probe["packages"]["dists"]["torch"][0]["version"] = "2.6.0+cpu"
    probe["cuda"] = {
        "init_error": "Torch not compiled with CUDA enabled",
        "warnings": [],
        "device_count": 0,
        "devices": [],
    }
    probe["smoke"] = {"skipped": "no usable accelerator"}
    return probe


def edit(probe: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """Set nested values: ``edit(p, cuda__init_error="x")`` sets ``p["cuda"]["init_error"]``."""
    for dotted, value in changes.items():
        *parents, leaf = dotted.split("__")
        node = probe
        for key in parents:
            node = node.setdefault(key, {})
        node[leaf] = value
    return probe


def codes(findings: list[Any]) -> list[str]:
    return sorted(f.code for f in findings)
