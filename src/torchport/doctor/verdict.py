"""Which accelerators are usable, the one-line verdict, and the facts the report shows. Pure."""

from __future__ import annotations

from typing import Any

from torchport.doctor.facts import (
    Probe,
    capability,
    dist_version,
    driver_version,
    env,
    gib,
    gpus,
    nvidia_present,
    stage,
    torch_build,
    torch_version,
)
from torchport.findings import Finding, Severity

ACCELERATORS = ("cuda", "mps", "xpu")
CPU_VERDICT = "No accelerator found; running on CPU."
# Findings that make a device that initialised unusable all the same.
_BLOCKING = {"TP504", "TP505", "TP530", "TP531", "TP533"}
# Probe failures explain everything after them, so they lead the verdict.
_FIRST = ("TP530", "TP531", "TP532")
# About what the user's scripts import, not about the device: reported, but no verdict on a GPU.
_NOT_ABOUT_THE_DEVICE = {"TP534"}


def _cuda_devices(probe: Probe) -> list[str]:
    cuda = stage(probe, "cuda")
    if torch_build(probe) not in ("cuda", "rocm") or cuda.get("init_error"):
        return []
    devices = cuda.get("devices") or []
    return [f"{d.get('name')} (cuda:{d.get('index')})" for d in devices if isinstance(d, dict)]


def usable(probe: Probe, findings: list[Finding]) -> dict[str, list[str]]:
    """Accelerator type -> its usable devices, named for people."""
    found = {
        "cuda": _cuda_devices(probe),
        "mps": ["Apple MPS (mps)"] if stage(probe, "mps").get("available") else [],
        "xpu": [
            f"{name} (xpu:{i})" for i, name in enumerate(stage(probe, "xpu").get("devices") or [])
        ],
    }
    if any(f.code in _BLOCKING for f in findings):
        smoke_device = str(stage(probe, "smoke").get("device") or "cuda")
        found[smoke_device.split(":", maxsplit=1)[0]] = []
    return {kind: devices for kind, devices in found.items() if devices}


def accelerator_evidence(probe: Probe) -> bool:
    """Whether anything suggests this machine has (or is meant to use) an accelerator."""
    python = stage(probe, "python")
    apple = python.get("system") == "Darwin" and (
        python.get("machine") == "arm64" or python.get("rosetta") is True
    )
    xpu_build = bool(stage(probe, "torch").get("xpu_compiled"))
    # Not AMD or Intel graphics on the PCI bus: most are integrated, and torch not meant for them.
    return nvidia_present(probe) or apple or xpu_build


def _reason(findings: list[Finding]) -> str | None:
    serious = [f for f in findings if f.severity >= Severity.WARNING]
    if not serious:
        return None
    worst = max(f.severity for f in serious)
    top = sorted(
        (f for f in serious if f.severity == worst),
        key=lambda f: (f.code not in _FIRST, f.code),
    )[0]
    return top.message.split(". ")[0].rstrip(".:")


def verdict(probe: Probe, findings: list[Finding]) -> str:
    """ "GPU usable: …", "GPU not usable: <reason>", or the calm CPU line."""
    devices = [d for ds in usable(probe, findings).values() for d in ds]
    if devices:
        return f"GPU usable: {', '.join(devices)}"
    findings = [f for f in findings if f.code not in _NOT_ABOUT_THE_DEVICE]
    reason = _reason(findings)
    errors = any(f.severity >= Severity.ERROR for f in findings)
    if errors or (reason and accelerator_evidence(probe)):
        return f"GPU not usable: {reason}"
    if accelerator_evidence(probe):
        return "GPU not usable: torch sees no device (see the facts above)"
    return CPU_VERDICT


def requirement_met(required: str, probe: Probe, findings: list[Finding]) -> bool:
    """For ``--require``: whether that accelerator type ("any" for any) is usable."""
    found = usable(probe, findings)
    return bool(found) if required == "any" else required in found


def _gpu_rows(probe: Probe, findings: list[Finding]) -> list[dict[str, Any]]:
    unsupported = {f.details.get("arch") for f in findings if f.code in ("TP504", "TP505")}
    rows = []
    for gpu in gpus(probe):
        cap = capability(gpu)
        sm = f"sm_{cap[0]}{cap[1]}" if cap else None
        rows.append(
            {
                "index": gpu.get("index"),
                "name": gpu.get("name"),
                "compute_capability": f"{cap[0]}.{cap[1]}" if cap else None,
                "memory": gib(gpu.get("memory_bytes")),
                "supported_by_wheel": None if sm is None else sm not in unsupported,
            }
        )
    return rows


def _torch_facts(probe: Probe) -> dict[str, Any]:
    info = stage(probe, "torch")
    build = torch_build(probe)
    label = {"cuda": f"CUDA {info.get('cuda')}", "rocm": f"ROCm {info.get('hip')}"}
    return {
        "torch": torch_version(probe) or info.get("import_error") or "not probed",
        "torch_build": label.get(build or "", "CPU-only" if build == "cpu" else "unknown"),
        "cuda_runtime_of_wheel": info.get("cuda"),
        "wheel_arch_list": info.get("arch_list") or [],
    }


def summarize(probe: Probe, findings: list[Finding]) -> dict[str, Any]:
    """The facts the report shows, in reading order; every value is JSON-able."""
    python, host, driver = stage(probe, "python"), stage(probe, "host"), stage(probe, "driver")
    found = usable(probe, findings)
    facts: dict[str, Any] = {
        "python": f"{python.get('version')} ({python.get('executable')})",
        "platform": python.get("platform"),
        **_torch_facts(probe),
        "driver": driver_version(probe),
        "driver_source": driver.get("source")
        or ("kernel module" if driver_version(probe) else None),
        "gpus": _gpu_rows(probe, findings),
        "accelerator": next(iter(found), "cpu"),
        "cuda_visible_devices": _shown(env(probe, "CUDA_VISIBLE_DEVICES")),
        "container": host.get("container"),
        "wsl": host.get("wsl"),
        "dev_shm": gib(host.get("shm_bytes")),
        "numpy": dist_version(probe, "numpy"),
        "torchvision": dist_version(probe, "torchvision"),
        "torchaudio": dist_version(probe, "torchaudio"),
        "probe": stage(probe, "probe").get("status"),
    }
    smoke = _smoke_facts(stage(probe, "smoke"))
    if smoke:
        facts["smoke_test"] = smoke
    return facts


def _shown(value: str | None) -> str | None:
    # An empty CUDA_VISIBLE_DEVICES hides every GPU; an empty string would print as nothing.
    return "(empty)" if value == "" else value


def _smoke_facts(smoke: dict[str, Any]) -> dict[str, Any]:
    if not smoke.get("device"):
        return {}
    matmul, h2d = smoke.get("matmul") or {}, smoke.get("h2d") or {}
    facts: dict[str, Any] = {"device": smoke["device"]}
    if isinstance(matmul.get("tflops"), (int, float)):
        facts["matmul_fp32_tflops"] = round(matmul["tflops"], 2)
        facts["matmul_correct"] = matmul.get("correct")
    for key in ("pageable_gbps", "pinned_gbps"):
        if isinstance(h2d.get(key), (int, float)):
            facts[f"h2d_{key.removesuffix('_gbps')}_gb_per_s"] = round(h2d[key], 2)
    return facts
