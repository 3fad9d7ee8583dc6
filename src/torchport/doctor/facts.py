"""Read values out of a probe dict. Pure: every missing or malformed value reads as "unknown".

The probe dict is JSON from another process (and, in tests, hand-written), so every accessor
tolerates absent stages and wrong types instead of raising.
"""

from __future__ import annotations

import re
from typing import Any

Probe = dict[str, Any]
_DRIVER_IN_PROC = re.compile(r"Kernel Module\s+(?:for \S+\s+)?(\d+\.\d+(?:\.\d+)?)")
_LOCAL_CUDA_TAG = re.compile(r"\+(cu\d+|cpu|rocm[\d.]+|xpu)\b")


def stage(probe: Probe, name: str) -> dict[str, Any]:
    value = probe.get(name)
    return value if isinstance(value, dict) else {}


def version_tuple(text: object) -> tuple[int, ...]:
    """``"550.54.14"`` -> (550, 54, 14); ``"2.5.1+cu124"`` -> (2, 5, 1); junk -> ()."""
    if not isinstance(text, str):
        return ()
    parts = []
    for piece in text.split("+")[0].split("."):
        digits = re.match(r"\d+", piece)
        if digits is None:
            break
        parts.append(int(digits.group()))
    return tuple(parts)


def torch_version(probe: Probe) -> str | None:
    version = stage(probe, "torch").get("version")
    return version if isinstance(version, str) else None


def torch_build(probe: Probe) -> str | None:
    """ "cuda", "rocm", "cpu", or None when torch could not be probed."""
    info = stage(probe, "torch")
    if not isinstance(info.get("version"), str):
        return None
    if info.get("hip"):
        return "rocm"
    return "cuda" if info.get("cuda") else "cpu"


def wheel_cuda(probe: Probe) -> tuple[int, ...]:
    """The CUDA runtime version the torch wheel was built with, e.g. (12, 4); () for none."""
    return version_tuple(stage(probe, "torch").get("cuda"))


def cuda_tag(version: tuple[int, ...]) -> str:
    """(12, 4) -> "cu124", the suffix of PyTorch's wheel index."""
    return "cu" + "".join(str(v) for v in version[:2])


def local_tag(version: object) -> str | None:
    """The build tag of a version string: ``"0.20.0+cu121"`` -> "cu121"; no tag -> None."""
    match = _LOCAL_CUDA_TAG.search(version) if isinstance(version, str) else None
    return match.group(1) if match else None


def driver_version(probe: Probe) -> str | None:
    """The NVIDIA driver version from NVML / nvidia-smi, else from the kernel module."""
    version = stage(probe, "driver").get("version")
    if isinstance(version, str) and version:
        return version
    return kernel_module_version(probe)


def kernel_module_version(probe: Probe) -> str | None:
    text = stage(probe, "host").get("proc_driver_version")
    match = _DRIVER_IN_PROC.search(text) if isinstance(text, str) else None
    return match.group(1) if match else None


def is_linux(probe: Probe) -> bool:
    return stage(probe, "python").get("system") == "Linux"


def gpus(probe: Probe) -> list[dict[str, Any]]:
    """The NVIDIA GPUs known to CUDA, else to the driver (NVML or nvidia-smi)."""
    for source in (stage(probe, "cuda").get("devices"), stage(probe, "driver").get("gpus")):
        if isinstance(source, list) and source:
            return [g for g in source if isinstance(g, dict)]
    return []


def capability(gpu: dict[str, Any]) -> tuple[int, int] | None:
    cap = gpu.get("capability")
    if isinstance(cap, list) and len(cap) == 2 and all(isinstance(c, int) for c in cap):
        return (cap[0], cap[1])
    return None


def pci_gpus(probe: Probe, vendor: str) -> list[dict[str, Any]]:
    found = stage(probe, "host").get("pci_gpus")
    if not isinstance(found, list):
        return []
    return [g for g in found if isinstance(g, dict) and g.get("vendor") == vendor]


def dev_nvidia(probe: Probe) -> list[str]:
    names = stage(probe, "host").get("dev_nvidia")
    return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []


def nvidia_present(probe: Probe) -> bool:
    """Whether anything shows an NVIDIA GPU: PCI, driver, device files or the kernel module."""
    return bool(
        pci_gpus(probe, "nvidia")
        or gpus(probe)
        or "nvidia0" in dev_nvidia(probe)
        or kernel_module_version(probe)
    )


def gpu_label(probe: Probe) -> str:
    """Names the NVIDIA GPUs for a message: "NVIDIA A100 (8.0)" or "an NVIDIA GPU"."""
    labels = []
    for gpu in gpus(probe):
        cap = capability(gpu)
        name = str(gpu.get("name") or "NVIDIA GPU")
        labels.append(f"{name} ({cap[0]}.{cap[1]})" if cap else name)
    unique = list(dict.fromkeys(labels))
    return ", ".join(unique) if unique else "an NVIDIA GPU"


def cuda_init_error(probe: Probe) -> str | None:
    """The error ``torch.cuda.init()`` raised, on a CUDA build only (on CPU builds it is moot)."""
    if torch_build(probe) != "cuda":
        return None
    error = stage(probe, "cuda").get("init_error")
    return error if isinstance(error, str) and error else None


def cuda_device_count(probe: Probe) -> int:
    count = stage(probe, "cuda").get("device_count")
    return count if isinstance(count, int) else 0


def env(probe: Probe, name: str) -> str | None:
    value = stage(probe, "env").get(name)
    return value if isinstance(value, str) else None


def dists(probe: Probe, name: str) -> list[dict[str, Any]]:
    """Installed distributions called ``name`` (one per site folder)."""
    found = stage(probe, "packages").get("dists")
    items = found.get(name) if isinstance(found, dict) else None
    return [d for d in items if isinstance(d, dict)] if isinstance(items, list) else []


def dist_version(probe: Probe, name: str) -> str | None:
    found = dists(probe, name)
    version = found[0].get("version") if found else None
    return version if isinstance(version, str) else None


def gib(nbytes: object) -> str:
    return f"{nbytes / 2**30:.1f} GiB" if isinstance(nbytes, (int, float)) else "unknown"
