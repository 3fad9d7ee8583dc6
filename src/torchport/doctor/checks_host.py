"""Diagnoses about the host (containers, WSL, macOS, Intel XPU, /dev/shm), the probe itself, the
smoke test, and precision settings."""

from __future__ import annotations

from torchport.doctor.facts import (
    Probe,
    capability,
    cuda_device_count,
    cuda_init_error,
    dev_nvidia,
    env,
    gib,
    gpus,
    nvidia_present,
    pci_gpus,
    stage,
    torch_build,
    torch_version,
    version_tuple,
)
from torchport.findings import Finding, Fix, Severity
from torchport.rules import environment as rules

MIN_SHM_BYTES = 2**30
MPS_MIN_MACOS = (12, 3)
_STAGE_HINTS = {
    "python": "while reading the interpreter",
    "env": "while reading the environment",
    "host": "while reading the host",
    "packages": "while listing packages",
    "local_torch": "while looking for a local torch",
    "driver": "while querying the driver (NVML / nvidia-smi)",
    "torch": "in `import torch`",
    "cuda": "in CUDA initialisation",
    "smoke": "in the smoke test on the device",
    "mps": "while checking MPS",
    "xpu": "while checking XPU",
}


def check_container(probe: Probe) -> list[Finding]:
    host = stage(probe, "host")
    container = host.get("container")
    if not container or host.get("wsl") or dev_nvidia(probe):
        return []
    hint = env(probe, "NVIDIA_VISIBLE_DEVICES")
    evidence = bool(pci_gpus(probe, "nvidia") or hint)
    if torch_build(probe) != "cuda" and not evidence:
        return []
    shown = f" (NVIDIA_VISIBLE_DEVICES={hint})" if hint else ""
    message = (
        f"This {container} container has no /dev/nvidia* devices{shown}: it was started "
        "without GPU access."
    )
    if not evidence:
        # Nothing shows the host has a GPU (the default Linux wheel is a CUDA build): a hint only.
        message = f"If the host has an NVIDIA GPU: {message[0].lower()}{message[1:]}"
    fix = Fix(
        "Start it with `docker run --gpus all ...` (install the NVIDIA Container Toolkit on the "
        "host), `podman run --device nvidia.com/gpu=all ...`, or request `nvidia.com/gpu: 1` "
        "in the Kubernetes resource limits."
    )
    severity = None if evidence else Severity.INFO
    finding = rules.ContainerWithoutGpuAccess.finding(
        message, fix=fix, severity=severity, container=container
    )
    return [finding]


def check_wsl(probe: Probe) -> list[Finding]:
    host = stage(probe, "host")
    if not host.get("wsl") or torch_build(probe) != "cuda":
        return []
    missing = [
        name
        for name, present in (
            ("/dev/dxg", host.get("dev_dxg")),
            ("/usr/lib/wsl/lib/libcuda.so", host.get("wsl_libcuda")),
        )
        if not present
    ]
    if not missing:
        return []
    message = f"WSL does not expose the GPU: {' and '.join(missing)} missing."
    # Without NVIDIA evidence this may be a GPU-less machine with the default (CUDA) wheel.
    severity = None if nvidia_present(probe) else Severity.INFO
    fix = Fix(
        "Install the current NVIDIA driver on Windows (not inside WSL), run `wsl --update` in "
        "PowerShell, and make sure the distro runs WSL 2 (`wsl --set-version <distro> 2`)."
    )
    return [rules.WslGpuNotExposed.finding(message, fix=fix, severity=severity, missing=missing)]


def _apple_silicon(probe: Probe) -> bool:
    python = stage(probe, "python")
    return python.get("system") == "Darwin" and (
        python.get("machine") == "arm64" or python.get("rosetta") is True
    )


def check_mps(probe: Probe) -> list[Finding]:
    mps, python = stage(probe, "mps"), stage(probe, "python")
    if not _apple_silicon(probe) or not mps:
        return []
    if not mps.get("built"):
        why = " under Rosetta (x86_64 Python)" if python.get("rosetta") else ""
        message = f"torch {torch_version(probe)} runs{why} without MPS support on Apple silicon."
        fix = Fix(
            'Install an arm64 Python (`python -c "import platform; print(platform.machine())"` '
            "must print arm64), then reinstall torch: `pip install --force-reinstall torch`."
        )
        return [rules.MpsNotBuilt.finding(message, fix=fix)]
    if mps.get("available"):
        return []
    macos = str(python.get("mac_ver") or "")
    old = bool(version_tuple(macos)) and version_tuple(macos) < MPS_MIN_MACOS
    message = f"torch is built with MPS, but MPS is unavailable on macOS {macos or 'unknown'}."
    fix = Fix("Upgrade macOS to 12.3 or newer." if old else "Run on the Mac itself (not in a VM).")
    return [rules.MpsUnavailable.finding(message, fix=fix, macos=macos)]


def check_xpu(probe: Probe) -> list[Finding]:
    xpu = stage(probe, "xpu")
    if not stage(probe, "torch").get("xpu_compiled") or xpu.get("available") is not False:
        return []
    intel = len(pci_gpus(probe, "intel"))
    seen = f" ({intel} Intel GPU{'s' if intel != 1 else ''} on the PCI bus)" if intel else ""
    mask = env(probe, "ZE_AFFINITY_MASK")
    message = f"torch {torch_version(probe)} is built for Intel XPU, but no XPU is available{seen}."
    fix = Fix(
        "Install Intel's GPU driver (packages `intel-level-zero-gpu` and `intel-opencl-icd`)"
        + (f" and unset ZE_AFFINITY_MASK (now {mask!r})." if mask is not None else ".")
    )
    return [rules.XpuUnusable.finding(message, fix=fix)]


def check_shm(probe: Probe) -> list[Finding]:
    size = stage(probe, "host").get("shm_bytes")
    if stage(probe, "python").get("system") != "Linux" or not isinstance(size, int):
        return []
    if size >= MIN_SHM_BYTES:
        return []
    message = (
        f"/dev/shm is only {size / 2**20:.0f} MiB; DataLoader workers pass batches through it "
        "and die with 'Bus error'."
    )
    fix = Fix(
        "Start the container with `--shm-size=8g` (or `--ipc=host`); in Kubernetes mount an "
        "emptyDir with `medium: Memory` at /dev/shm."
    )
    # DataLoader workers matter most when feeding a GPU; on a CPU-only box it is a hint.
    severity = None if nvidia_present(probe) else Severity.INFO
    return [rules.SmallDevShm.finding(message, fix=fix, severity=severity, shm=gib(size))]


def check_tf32(probe: Probe) -> list[Finding]:
    precision = stage(probe, "torch").get("matmul_precision")
    if precision != "highest" or cuda_init_error(probe) or cuda_device_count(probe) == 0:
        return []
    tensor_core = [g for g in gpus(probe) if (capability(g) or (0, 0)) >= (8, 0)]
    if not tensor_core:
        return []
    message = (
        f"float32 matmul precision is 'highest' by default, so {tensor_core[0].get('name')} "
        "runs float32 matmuls without its TF32 tensor cores."
    )
    fix = Fix('Call `torch.set_float32_matmul_precision("high")` at the start of training.')
    return [rules.Tf32NotEnabled.finding(message, fix=fix)]


def check_probe(probe: Probe) -> list[Finding]:
    info = stage(probe, "probe")
    status, where = info.get("status"), info.get("unfinished_stage")
    hint = _STAGE_HINTS.get(str(where), f"in stage {where!r}" if where else "")
    if status == "timeout":
        message = f"The environment probe did not finish within {info.get('timeout_s')} s" + (
            f": it hung {hint}." if hint else "."
        )
        fix = Fix(
            'Check `nvidia-smi` and `sudo dmesg | grep -i -E "nvrm|xid"`; reset the GPU or '
            "reboot. A larger --timeout helps only if the machine is merely slow."
        )
        return [rules.ProbeTimedOut.finding(message, fix=fix, stage=where)]
    if status == "crashed":
        tail = str(info.get("stderr_tail") or "").strip().splitlines()
        last = f": {tail[-1]}" if tail else ""
        message = (
            f"The environment probe died with exit code {info.get('returncode')}"
            + (f" {hint}" if hint else "")
            + last
        )
        fix = Fix(
            'Run `python -c "import torch; torch.cuda.init()"` to see the crash; reinstall '
            "the driver or torch."
        )
        return [rules.ProbeCrashed.finding(message, fix=fix, stage=where)]
    return _stage_errors(probe)


def _stage_errors(probe: Probe) -> list[Finding]:
    """A probe stage that raised: what it would have found is unknown, so say so."""
    findings = []
    for name, value in probe.items():
        if name != "probe" and isinstance(value, dict) and isinstance(value.get("error"), str):
            where = _STAGE_HINTS.get(name, f"in stage {name!r}")
            message = f"The environment probe failed {where}: {value['error']}"
            fix = Fix(
                "Rerun with `torchport doctor --json` and report the `raw_probe` section; the "
                "facts of that stage are missing from this report."
            )
            findings.append(
                rules.ProbeCrashed.finding(message, fix=fix, severity=Severity.WARNING, stage=name)
            )
    return findings


def check_smoke(probe: Probe) -> list[Finding]:
    smoke = stage(probe, "smoke")
    device = smoke.get("device")
    findings = []
    for step in ("matmul", "h2d"):
        result = smoke.get(step)
        if not isinstance(result, dict):
            continue
        error = result.get("error")
        if error is None and result.get("correct") is False:
            relative = result.get("max_relative_error")
            error = f"the result differs from the CPU's (relative error {relative})"
        if error:
            what = "a matmul" if step == "matmul" else "a host-to-device copy"
            message = f"The smoke test failed on {device}: {what} went wrong: {error}"
            fix = Fix(
                "If it says 'no kernel image is available', install a wheel whose arch list "
                "includes this GPU; otherwise check `nvidia-smi` and dmesg for Xid errors."
            )
            findings.append(rules.GpuSmokeTestFailed.finding(message, fix=fix, step=step))
    return findings


CHECKS = (
    check_probe,
    check_container,
    check_wsl,
    check_mps,
    check_xpu,
    check_shm,
    check_tf32,
    check_smoke,
)
