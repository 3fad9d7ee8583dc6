"""Diagnoses about the torch build and the packages around it (pure functions of the probe)."""

from __future__ import annotations

import os
import re

from torchport.doctor import drivers
from torchport.doctor.facts import (
    Probe,
    capability,
    cuda_tag,
    dist_version,
    dists,
    driver_version,
    gpu_label,
    gpus,
    is_linux,
    local_tag,
    nvidia_present,
    stage,
    torch_build,
    torch_version,
    version_tuple,
    wheel_cuda,
)
from torchport.findings import Finding, Fix
from torchport.rules import build as env

_ARCH = re.compile(r"^(sm|compute)_(\d+)(\d)([a-z]?)$")
# Current wheels are built with CUDA 12+, which no longer compiles for Kepler (3.x).
OLDEST_CURRENT_CAPABILITY = (5, 0)
_FOUND_DRIVER = re.compile(r"found version (\d+)")


def _companions(probe: Probe) -> list[str]:
    return ["torch"] + [name for name in ("torchvision", "torchaudio") if dists(probe, name)]


def wheel_fix(probe: Probe, prefix: str = "", cuda: tuple[int, int] | None = None) -> Fix:
    """Install torch (and its installed companions) from the index the driver supports."""
    cuda = cuda or drivers.best_wheel_cuda(driver_version(probe))
    if cuda is None:
        return Fix(f"{prefix}Upgrade the NVIDIA driver: it is too old for every current wheel.")
    command = drivers.install_command(cuda, _companions(probe))
    return Fix(f"{prefix}Run `{command}`.")


def check_cpu_only_build(probe: Probe) -> list[Finding]:
    if torch_build(probe) != "cpu" or not nvidia_present(probe):
        return []
    driver = driver_version(probe)
    on = f" (driver {driver})" if driver else ""
    conda = any(n.startswith("cpuonly") for n in stage(probe, "packages").get("conda_torch", []))
    prefix = "Run `conda remove cpuonly pytorch`, then: " if conda else ""
    message = (
        f"torch {torch_version(probe)} is a CPU-only build (torch.version.cuda is None), "
        f"but this machine has {gpu_label(probe)}{on}; install a CUDA build."
    )
    return [env.CpuOnlyTorchWithNvidiaGpu.finding(message, fix=wheel_fix(probe, prefix))]


def reported_driver_cuda(probe: Probe) -> tuple[bool, tuple[int, int] | None]:
    """Whether CUDA init said the driver is too old, and the CUDA version it said it supports."""
    error = stage(probe, "cuda").get("init_error")
    if not isinstance(error, str) or "too old" not in error:
        return False, None
    found = _FOUND_DRIVER.search(error)
    if found is None:
        return True, None
    value = int(found.group(1))  # the driver's CUDA version as an integer: 12020 is 12.2
    return True, (value // 1000, value % 1000 // 10)


def check_driver_version(probe: Probe) -> list[Finding]:
    if torch_build(probe) != "cuda":
        return []
    need = drivers.requirement(wheel_cuda(probe))
    driver = driver_version(probe)
    have = version_tuple(driver) if is_linux(probe) else ()
    subject = f"torch {torch_version(probe)} (CUDA {'.'.join(map(str, wheel_cuda(probe)))} runtime)"
    told, driver_cuda = reported_driver_cuda(probe)
    if told or (need and have and have < version_tuple(need[1])):
        shown = f"The NVIDIA driver {driver or ''}".rstrip()
        says = (
            f"supports CUDA {driver_cuda[0]}.{driver_cuda[1]} only" if driver_cuda else "is too old"
        )
        floor = f"needs at least {need[1]}" if need else "needs a newer driver"
        message = f"{shown} {says}: {subject} {floor}."
        upgrade = f"Upgrade the driver to {need[0] if need else 'the latest'} or newer and reboot"
        wheel = (
            drivers.wheel_for_driver_cuda(driver_cuda)
            if driver_cuda and not driver
            else drivers.best_wheel_cuda(driver)
        )
        fix = wheel_fix(probe, f"{upgrade}, or: ", wheel) if wheel else Fix(f"{upgrade}.")
        return [env.DriverOlderThanWheelCuda.finding(message, fix=fix, driver=driver)]
    if need and have and have < version_tuple(need[0]):
        message = (
            f"The NVIDIA driver {driver} runs {subject} only through minor-version "
            f"compatibility (its toolkit driver is {need[0]}); PTX JIT may fail."
        )
        fix = Fix(f"Upgrade the NVIDIA driver to {need[0]} or newer.")
        return [env.DriverBelowToolkitDriver.finding(message, fix=fix, driver=driver)]
    return []


def parse_arch(arch: str) -> tuple[str, tuple[int, int], bool] | None:
    """``"sm_86"`` -> ("sm", (8, 6), False); ``"sm_90a"`` -> ("sm", (9, 0), True); else None."""
    match = _ARCH.match(arch)
    if match is None:
        return None
    kind, major, minor, suffix = match.groups()
    return kind, (int(major), int(minor)), bool(suffix)


def arch_supports(arch_list: list[str], cap: tuple[int, int]) -> bool:
    """Whether a wheel with ``arch_list`` runs on a GPU of compute capability ``cap``.

    A binary for sm_XY runs on X.Y and later minors of the same major; an arch-specific one
    (sm_90a) only on exactly that; PTX (compute_XY) is compiled for any later GPU.
    """
    for kind, arch, specific in filter(None, map(parse_arch, arch_list)):
        if kind == "compute" and arch <= cap:
            return True
        if kind == "sm" and (arch == cap or (not specific and arch[0] == cap[0] and arch <= cap)):
            return True
    return False


def check_gpu_arch(probe: Probe) -> list[Finding]:
    arch_list = [a for a in stage(probe, "torch").get("arch_list") or [] if isinstance(a, str)]
    parsed = [p[1] for p in map(parse_arch, arch_list) if p is not None]
    build = torch_build(probe)
    findings = []
    for gpu in gpus(probe):
        cap = capability(gpu)
        if cap is None:
            continue
        sm = f"sm_{cap[0]}{cap[1]}"
        name = f"{gpu.get('name', 'The GPU')} (compute capability {cap[0]}.{cap[1]}, {sm})"
        if build == "cuda" and parsed and not arch_supports(arch_list, cap):
            wheel = f"torch {torch_version(probe)} has kernels for {', '.join(arch_list)}"
            if cap < min(parsed):
                findings.append(_too_old(f"{name} is older than this wheel supports: {wheel}.", sm))
            else:
                message = f"{name} is not in the wheel's arch list: {wheel}."
                fix = Fix(f"Install a wheel for a newer CUDA that includes {sm}: {_newest(probe)}")
                findings.append(env.GpuArchNotInWheel.finding(message, fix=fix, arch=sm))
        elif build == "cpu" and cap < OLDEST_CURRENT_CAPABILITY:
            findings.append(_too_old(f"{name} is older than current torch wheels support.", sm))
    return findings


def _newest(probe: Probe) -> str:
    cuda = drivers.WHEEL_CUDAS[0]
    return f"`{drivers.install_command(cuda, _companions(probe))}` (needs a recent driver)."


def _too_old(message: str, sm: str) -> Finding:
    fix = Fix(
        f"Install an older torch release whose `torch.cuda.get_arch_list()` includes {sm}, "
        f"or build PyTorch from source with TORCH_CUDA_ARCH_LIST={sm[3:-1]}.{sm[-1]}."
    )
    return env.GpuOlderThanWheel.finding(message, fix=fix, arch=sm)


def check_several_torch_installs(probe: Probe) -> list[Finding]:
    installs = dists(probe, "torch")
    if len(installs) < 2:
        return []
    where = "; ".join(f"{d.get('version')} in {d.get('location')}" for d in installs)
    message = f"{len(installs)} torch installs are visible to this Python: {where}."
    fix = Fix("Run `pip uninstall -y torch` until none is left, then install one CUDA build.")
    return [env.SeveralTorchInstalls.finding(message, fix=fix, installs=installs)]


def check_mixed_pip_conda(probe: Probe) -> list[Finding]:
    conda = [n for n in stage(probe, "packages").get("conda_torch", []) if n.startswith("pytorch-")]
    pip = [d for d in dists(probe, "torch") if d.get("installer") == "pip"]
    if not conda or not pip:
        return []
    message = (
        f"torch is installed by both conda ({conda[0].removesuffix('.json')}) and pip "
        f"({pip[0].get('version')}) in this environment."
    )
    fix = Fix("Run `conda remove pytorch cpuonly` and keep the pip install (or the reverse).")
    return [env.MixedPipCondaTorch.finding(message, fix=fix)]


def check_numpy2_old_torch(probe: Probe) -> list[Finding]:
    numpy = dist_version(probe, "numpy")
    torch = torch_version(probe) or dist_version(probe, "torch")
    if not numpy or not torch or version_tuple(numpy)[:1] < (2,):
        return []
    if not version_tuple(torch) or version_tuple(torch) >= (2, 3):
        return []
    message = f"NumPy {numpy} is installed with torch {torch}, which was built for NumPy 1."
    fix = Fix('Run `pip install "numpy<2"`, or upgrade torch to 2.3 or newer.')
    return [env.Numpy2WithTorchBefore23.finding(message, fix=fix, numpy=numpy, torch=torch)]


def _torch_tag(probe: Probe) -> str | None:
    build = torch_build(probe)
    return cuda_tag(wheel_cuda(probe)) if build == "cuda" else "cpu" if build == "cpu" else None


def check_companion_cuda(probe: Probe) -> list[Finding]:
    torch_tag = _torch_tag(probe)
    findings = []
    for name in ("torchvision", "torchaudio"):
        version = dist_version(probe, name)
        tag = local_tag(version)
        if (
            torch_tag is None
            or tag is None
            or tag == torch_tag
            or not tag.startswith(("cu", "cpu"))
        ):
            continue
        message = (
            f"{name} {version} is built for {tag}, but torch {torch_version(probe)} "
            f"for {torch_tag}."
        )
        if torch_tag == "cpu":
            fix = Fix(f"Reinstall both from one index: {_newest(probe)}")
        else:
            url = drivers.INDEX_URL.format(tag=torch_tag)
            fix = Fix(f"Run `pip install --force-reinstall --no-deps {name} --index-url {url}`.")
        findings.append(env.CompanionCudaMismatch.finding(message, fix=fix, package=name))
    return findings


def _expected_companion(name: str, torch: tuple[int, ...]) -> tuple[int, int]:
    return (0, torch[1] + 15) if name == "torchvision" else (torch[0], torch[1])


def check_companion_version(probe: Probe) -> list[Finding]:
    torch = version_tuple(torch_version(probe) or dist_version(probe, "torch"))
    if len(torch) < 2 or torch[0] != 2:
        return []
    findings = []
    for name in ("torchvision", "torchaudio"):
        version = dist_version(probe, name)
        have = version_tuple(version)[:2]
        want = _expected_companion(name, torch)
        if len(have) == 2 and have != want:
            message = (
                f"{name} {version} does not match torch {torch_version(probe)} "
                f"(expects {name} {want[0]}.{want[1]})."
            )
            fix = Fix(f'Run `pip install "{name}=={want[0]}.{want[1]}.*"` from torch\'s index.')
            findings.append(env.CompanionVersionMismatch.finding(message, fix=fix, package=name))
    return findings


def check_torch_import(probe: Probe) -> list[Finding]:
    error = stage(probe, "torch").get("import_error")
    if not isinstance(error, str):
        return []
    message = f"`import torch` failed: {error}"
    if error.startswith("ModuleNotFoundError") and "'torch'" in error:
        # Not a broken install: none at all (torchport does not install torch for you).
        message += " (torch is not installed in this Python environment)"
        fix = (
            wheel_fix(probe, "Install torch: ")
            if nvidia_present(probe)
            else Fix("Run `pip install torch` (https://pytorch.org/get-started lists the builds).")
        )
    elif nvidia_present(probe):
        fix = wheel_fix(probe, "Reinstall torch: ")
    else:
        fix = Fix("Run `pip install --force-reinstall torch`.")
    return [env.TorchImportFailed.finding(message, fix=fix)]


def check_local_torch(probe: Probe) -> list[Finding]:
    shadowing = stage(probe, "local_torch").get("shadowing")
    if not isinstance(shadowing, dict) or not isinstance(shadowing.get("path"), str):
        return []
    path, kind = shadowing["path"], "folder" if shadowing.get("kind") == "folder" else "file"
    if shadowing.get("on") == "working directory":
        where, who = "in the working directory", "every script run from there"
    else:
        where, who = f"on sys.path ({shadowing.get('entry')})", "every script"
    installed = stage(probe, "torch").get("file")
    instead = (
        f"the installed torch ({os.path.dirname(installed)})"
        if isinstance(installed, str)
        else "an installed torch"
    )
    message = (
        f"`import torch` loads the {kind} {path} {where}, not {instead}: {who} gets the local "
        "one. The doctor did not run it, and probed the installed torch."
    )
    fix = Fix(
        f"Rename {path} (for example to `torch_utils`), or run your scripts from another "
        'folder; `python -c "import torch; print(torch.__file__)"` then shows the installed one.'
    )
    return [env.LocalTorchShadowsInstall.finding(message, fix=fix, path=path)]


CHECKS = (
    check_local_torch,
    check_torch_import,
    check_cpu_only_build,
    check_driver_version,
    check_gpu_arch,
    check_several_torch_installs,
    check_mixed_pip_conda,
    check_numpy2_old_torch,
    check_companion_cuda,
    check_companion_version,
)
