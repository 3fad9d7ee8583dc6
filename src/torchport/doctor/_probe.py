"""The environment probe, run in a subprocess (``probes.probe_command``; ``--smoke`` for the test).

It prints one JSON object per line, ``{"<stage>": {...}}``, flushed as soon as the stage is done,
so that when a hung driver stops it the parent still has every earlier stage and knows which one
hung. Stages go from cheap and safe (files, environment) to risky (NVML, CUDA initialisation).
Nothing here may raise out: each stage is wrapped, and an exception becomes ``{"error": ...}``.
Only the standard library is imported at module level; torch is imported inside its stage.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import platform
import shutil
import subprocess
import sys
import warnings
from collections.abc import Callable
from importlib import metadata
from typing import Any

from torchport.doctor._local import probe_local_torch

ENV_VARS = (
    "CUDA_VISIBLE_DEVICES",
    "NVIDIA_VISIBLE_DEVICES",
    "CUDA_HOME",
    "CUDA_PATH",
    "LD_LIBRARY_PATH",
    "LD_PRELOAD",
    "PYTORCH_CUDA_ALLOC_CONF",
    "CUDA_LAUNCH_BLOCKING",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "ZE_AFFINITY_MASK",
    "CONDA_PREFIX",
    "VIRTUAL_ENV",
)
CUDA_LIB_PREFIXES = ("libcuda.so", "libcudart.so", "libcublas", "libcudnn", "libnvrtc", "libnccl")
PCI_VENDORS = {"0x10de": "nvidia", "0x1002": "amd", "0x8086": "intel"}
SMI_FIELDS = "index,name,driver_version,memory.total,compute_cap"
SUBPROCESS_TIMEOUT_S = 20


def _text(path: str, limit: int = 4000) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read(limit)
    except OSError:
        return None


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".strip()


def probe_python() -> dict[str, Any]:
    info: dict[str, Any] = {
        "version": platform.python_version(),
        "executable": sys.executable,
        "prefix": sys.prefix,
        "system": platform.system(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "mac_ver": platform.mac_ver()[0] or None,
        "rosetta": None,
    }
    if sys.platform == "darwin":
        # An x86 Python on Apple silicon runs under Rosetta, and torch then has no MPS.
        out = _run(["sysctl", "-n", "sysctl.proc_translated"])
        info["rosetta"] = out.get("stdout", "").strip() == "1"
    return info


def probe_env() -> dict[str, Any]:
    return {name: os.environ.get(name) for name in ENV_VARS}


def _container() -> str | None:
    if os.path.exists("/.dockerenv"):
        return "docker"
    if os.path.exists("/run/.containerenv"):
        return "podman"
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return "kubernetes"
    cgroup = _text("/proc/1/cgroup") or ""
    for name in ("docker", "kubepods", "containerd", "lxc"):
        if name in cgroup:
            return name
    return None


def _pci_gpus() -> list[dict[str, str]]:
    gpus = []
    for dev in sorted(glob.glob("/sys/bus/pci/devices/*")):
        cls = (_text(os.path.join(dev, "class")) or "").strip()
        vendor = (_text(os.path.join(dev, "vendor")) or "").strip()
        # PCI class 0x03xxxx is a display controller; 0x0302 covers headless compute GPUs.
        if cls.startswith("0x03") and vendor in PCI_VENDORS:
            device = (_text(os.path.join(dev, "device")) or "").strip()
            gpus.append(
                {"slot": os.path.basename(dev), "vendor": PCI_VENDORS[vendor], "device": device}
            )
    return gpus


def _cuda_libs_on_path() -> list[dict[str, Any]]:
    found = []
    for folder in filter(None, os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep)):
        try:
            names = sorted(n for n in os.listdir(folder) if n.startswith(CUDA_LIB_PREFIXES))
        except OSError:
            continue
        if names:
            found.append({"dir": folder, "libs": names[:20]})
    return found


def _shm_bytes() -> int | None:
    try:
        st = os.statvfs("/dev/shm")
    except (OSError, AttributeError):
        return None
    return st.f_frsize * st.f_blocks


def probe_host() -> dict[str, Any]:
    version = _text("/proc/version") or ""
    return {
        "dev_nvidia": sorted(os.path.basename(p) for p in glob.glob("/dev/nvidia*")),
        "dev_dxg": os.path.exists("/dev/dxg"),
        "proc_driver_version": _text("/proc/driver/nvidia/version"),
        "wsl": "microsoft" in version.lower(),
        "wsl_libcuda": bool(glob.glob("/usr/lib/wsl/lib/libcuda.so*")),
        "container": _container(),
        "shm_bytes": _shm_bytes(),
        "pci_gpus": _pci_gpus(),
        "cuda_libs_on_ld_library_path": _cuda_libs_on_path(),
    }


def _dist_info(dist: metadata.Distribution) -> dict[str, Any]:
    installer = (dist.read_text("INSTALLER") or "").strip() or None
    return {"version": dist.version, "location": str(dist.locate_file("")), "installer": installer}


def probe_packages() -> dict[str, Any]:
    wanted = {"torch", "numpy", "torchvision", "torchaudio", "nvidia-ml-py", "pynvml"}
    found: dict[str, list[dict[str, Any]]] = {name: [] for name in sorted(wanted)}
    seen: set[tuple[str, str]] = set()
    for dist in metadata.distributions():
        name = (dist.metadata["Name"] or "").lower()
        if name in wanted:
            info = _dist_info(dist)
            if (name, info["location"]) not in seen:
                seen.add((name, info["location"]))
                found[name].append(info)
    conda_meta = os.path.join(sys.prefix, "conda-meta")
    conda = sorted(
        os.path.basename(p)
        for pattern in ("pytorch-[0-9]*.json", "cpuonly-*.json", "pytorch-cuda-*.json")
        for p in glob.glob(os.path.join(conda_meta, pattern))
    )
    return {"dists": found, "conda_env": os.path.isdir(conda_meta), "conda_torch": conda}


def _run(cmd: list[str]) -> dict[str, Any]:
    try:
        done = subprocess.run(
            cmd, capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return {"error": _error(exc)}
    return {"returncode": done.returncode, "stdout": done.stdout, "stderr": done.stderr}


def _nvml() -> dict[str, Any]:
    try:
        import pynvml
    except ImportError:
        return {"error": "nvidia-ml-py is not installed"}
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - any NVML failure is a fact to report
        return {"error": str(exc) or type(exc).__name__}
    try:
        gpus = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(handle)
            gpus.append(
                {
                    "index": i,
                    "name": pynvml.nvmlDeviceGetName(handle),
                    "memory_bytes": int(pynvml.nvmlDeviceGetMemoryInfo(handle).total),
                    "capability": [int(major), int(minor)],
                }
            )
        return {
            "version": pynvml.nvmlSystemGetDriverVersion(),
            "cuda_driver_version": int(pynvml.nvmlSystemGetCudaDriverVersion()),
            "gpus": gpus,
        }
    except Exception as exc:  # noqa: BLE001
        return {"error": str(exc) or type(exc).__name__}
    finally:
        with contextlib.suppress(Exception):  # shutting down is best effort
            pynvml.nvmlShutdown()


def _smi_row(cells: list[str]) -> dict[str, Any]:
    cap = cells[4].split(".") if len(cells) > 4 else []
    try:
        memory = int(float(cells[3]) * 2**20)
    except ValueError:
        memory = None
    return {
        "index": int(cells[0]) if cells[0].isdigit() else cells[0],
        "name": cells[1],
        "memory_bytes": memory,
        "capability": [int(c) for c in cap] if all(c.isdigit() for c in cap) and cap else None,
    }


def _nvidia_smi() -> dict[str, Any]:
    if shutil.which("nvidia-smi") is None:
        return {"error": "nvidia-smi is not on PATH"}
    for fields in (SMI_FIELDS, SMI_FIELDS.removesuffix(",compute_cap")):
        # Drivers before about 510 do not know the compute_cap field; ask again without it.
        out = _run(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader,nounits"])
        said = out.get("stdout", "") + out.get("stderr", "")
        if out.get("returncode") == 0 or "compute_cap" not in said:
            break
    if out.get("returncode") != 0:
        return {"error": said.strip() or out.get("error")}
    rows = [[c.strip() for c in line.split(",")] for line in out["stdout"].splitlines() if line]
    return {
        "version": rows[0][2] if rows and len(rows[0]) > 2 else None,
        "gpus": [_smi_row(r) for r in rows if len(r) >= 4],
    }


def probe_driver() -> dict[str, Any]:
    nvml = _nvml()
    if "error" not in nvml:
        return {"source": "nvml", **nvml}
    smi = _nvidia_smi()
    if "error" not in smi:
        return {"source": "nvidia-smi", "nvml_error": nvml["error"], **smi}
    return {"source": None, "nvml_error": nvml["error"], "smi_error": smi["error"], "gpus": []}


def probe_torch() -> dict[str, Any]:
    try:
        import torch
    except BaseException as exc:  # noqa: BLE001 - a broken install may raise anything
        return {"import_error": _error(exc)}
    xpu = getattr(torch, "xpu", None)
    cudnn: Any = torch.backends.cudnn  # partly untyped in torch's stubs
    return {
        "version": torch.__version__,
        "file": torch.__file__,
        "cuda": torch.version.cuda,
        "hip": getattr(torch.version, "hip", None),
        "arch_list": list(torch.cuda.get_arch_list()),
        "xpu_compiled": bool(xpu is not None and xpu._is_compiled()),
        "matmul_precision": torch.get_float32_matmul_precision(),
        "cudnn": cudnn.version() if cudnn.is_available() else None,
    }


def probe_cuda() -> dict[str, Any]:
    import torch

    cuda: Any = torch.cuda  # init() is untyped in torch's stubs
    info: dict[str, Any] = {"init_error": None, "warnings": []}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            # is_available() only says False; initialising reveals the driver's own error text.
            cuda.init()
        except Exception as exc:  # noqa: BLE001
            info["init_error"] = str(exc) or type(exc).__name__
    info["warnings"] = [str(w.message) for w in caught]
    info["device_count"] = torch.cuda.device_count() if info["init_error"] is None else 0
    info["devices"] = [_cuda_device(torch, i) for i in range(info["device_count"])]
    return info


def _cuda_device(torch: Any, index: int) -> dict[str, Any]:
    props = torch.cuda.get_device_properties(index)
    return {
        "index": index,
        "name": props.name,
        "capability": [props.major, props.minor],
        "memory_bytes": int(props.total_memory),
        "multiprocessors": int(props.multi_processor_count),
    }


def probe_mps() -> dict[str, Any]:
    import torch

    mps = torch.backends.mps
    return {"built": bool(mps.is_built()), "available": bool(mps.is_available())}


def probe_xpu() -> dict[str, Any]:
    import torch

    xpu = getattr(torch, "xpu", None)
    if xpu is None:
        return {"present": False}
    info: dict[str, Any] = {"present": True, "available": bool(xpu.is_available())}
    info["device_count"] = int(xpu.device_count()) if info["available"] else 0
    info["devices"] = [xpu.get_device_name(i) for i in range(info["device_count"])]
    return info


STAGES: dict[str, Callable[[], dict[str, Any]]] = {
    "python": probe_python,
    "env": probe_env,
    "host": probe_host,
    "packages": probe_packages,
    "local_torch": probe_local_torch,  # before anything imports torch: it drops local ones
    "driver": probe_driver,
    "torch": probe_torch,
    "cuda": probe_cuda,
    "mps": probe_mps,
    "xpu": probe_xpu,
}


def _emit(stage: str, value: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({stage: value}, default=str) + "\n")
    sys.stdout.flush()


def _smoke(results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    from torchport.doctor._smoke import run_smoke

    return run_smoke(results)


def main(argv: list[str]) -> int:
    stages = dict(STAGES)
    if "--smoke" in argv:
        stages["smoke"] = lambda: _smoke(results)
    results: dict[str, dict[str, Any]] = {}
    for stage, probe in stages.items():
        _emit("_started", {"stage": stage})
        try:
            results[stage] = probe()
        except BaseException as exc:  # noqa: BLE001 - a probe never raises out
            results[stage] = {"error": _error(exc)}
        _emit(stage, results[stage])
        if "import_error" in results[stage]:
            break  # every later stage needs torch
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
