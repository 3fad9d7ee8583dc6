"""Diagnoses about CUDA initialisation, the NVIDIA driver stack and the process environment."""

from __future__ import annotations

import os
import re

from torchport.doctor.facts import (
    Probe,
    cuda_init_error,
    dev_nvidia,
    driver_version,
    env,
    gpus,
    kernel_module_version,
    nvidia_present,
    stage,
    torch_build,
    version_tuple,
)
from torchport.findings import Finding, Fix
from torchport.rules import Rule
from torchport.rules import environment as rules

WSL_LIB = "/usr/lib/wsl/lib"
_UUID_PREFIXES = ("GPU-", "MIG-")
_TOOLKIT_LIBS = ("libcudart.so", "libcublas", "libcudnn", "libnvrtc", "libnccl")

# CUDA init error text -> (rule, fix). First match wins; the driver-too-old text is TP502's.
INIT_ERRORS: tuple[tuple[re.Pattern[str], type[Rule], str], ...] = (
    (
        re.compile(r"found no nvidia driver|no cuda gpus are available", re.I),
        rules.NvidiaDriverNotLoaded,
        "Install the NVIDIA driver (Ubuntu: `sudo ubuntu-drivers install`), reboot, and check "
        "that `nvidia-smi` lists the GPU.",
    ),
    (
        re.compile(r"driver/library version mismatch", re.I),
        rules.NvmlDriverLibraryMismatch,
        "Reboot (or `sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && "
        "sudo modprobe nvidia`) so the kernel module matches the driver libraries.",
    ),
    (
        re.compile(r"\b802\b|system not yet initiali[sz]ed", re.I),
        rules.CudaSystemNotInitialized,
        "Start the Fabric Manager: `sudo systemctl enable --now nvidia-fabricmanager` "
        "(its version must equal the driver's).",
    ),
    (
        re.compile(r"\b803\b|unsupported display driver", re.I),
        rules.CudaDriverCombinationUnsupported,
        "Remove `cuda-compat` folders from LD_LIBRARY_PATH; after a driver upgrade, reboot.",
    ),
    (
        re.compile(r"\b804\b|forward compatibility was attempted", re.I),
        rules.CudaForwardCompatUnsupported,
        "Remove `cuda-compat` from LD_LIBRARY_PATH (it needs a data-centre GPU) and upgrade "
        "the driver instead.",
    ),
    (
        re.compile(r"busy or unavailable", re.I),
        rules.CudaDevicesBusy,
        "See which process holds the GPU with `nvidia-smi`; reset an exclusive compute mode "
        "with `sudo nvidia-smi -c DEFAULT`.",
    ),
    (
        re.compile(r"unknown error", re.I),
        rules.CudaUnknownError,
        "Reload the unified-memory module: `sudo rmmod nvidia_uvm && sudo modprobe nvidia_uvm` "
        "(or reboot); do not change CUDA_VISIBLE_DEVICES after the program started.",
    ),
)


def check_cuda_init(probe: Probe) -> list[Finding]:
    error = cuda_init_error(probe)
    if error is None or "too old" in error:
        return []
    message = f"CUDA failed to initialise: {error.strip()}"
    for pattern, rule, fix_text in INIT_ERRORS:
        if not pattern.search(error):
            continue
        if rule is rules.NvidiaDriverNotLoaded and not nvidia_present(probe):
            return []  # the default Linux wheel is a CUDA build: on a GPU-less machine, fine
        return [rule.finding(message, fix=Fix(fix_text), error=error)]
    fix = Fix('Check `nvidia-smi` and `dmesg | grep -i -E "nvrm|xid"` for driver-side errors.')
    return [rules.CudaInitFailed.finding(message, fix=fix, error=error)]


def visible_devices(value: str, count: int | None) -> list[str]:
    """The devices CUDA keeps from ``CUDA_VISIBLE_DEVICES``; it stops at the first invalid entry."""
    kept = []
    for token in (t.strip() for t in value.split(",")):
        if token.startswith(_UUID_PREFIXES) or (
            token.isdigit() and (count is None or int(token) < count)
        ):
            kept.append(token)
        else:
            break
    return kept


def check_cuda_visible_devices(probe: Probe) -> list[Finding]:
    value = env(probe, "CUDA_VISIBLE_DEVICES")
    if value is None or not (torch_build(probe) == "cuda" or nvidia_present(probe)):
        return []
    count = len(gpus(probe)) or None
    if visible_devices(value, count):
        return []
    found = f" ({count} GPU{'s' if count != 1 else ''} present)" if count else ""
    message = f"CUDA_VISIBLE_DEVICES={value!r} hides every GPU{found}."
    fix = Fix(
        "Run `unset CUDA_VISIBLE_DEVICES` (or `export CUDA_VISIBLE_DEVICES=0`) before starting "
        "Python; setting it after CUDA initialised has no effect."
    )
    return [rules.CudaVisibleDevicesHidesGpus.finding(message, fix=fix, value=value)]


def versions_differ(a: str | None, b: str | None) -> bool:
    return bool(a and b and version_tuple(a) != version_tuple(b))


def check_nvml_mismatch(probe: Probe) -> list[Finding]:
    if cuda_init_error(probe) and "mismatch" in (cuda_init_error(probe) or "").lower():
        return []  # check_cuda_init reports it with the CUDA text
    driver = stage(probe, "driver")
    errors = " ".join(str(driver.get(k) or "") for k in ("nvml_error", "smi_error"))
    module, library = kernel_module_version(probe), driver.get("version")
    differ = versions_differ(module, library if isinstance(library, str) else None)
    if "mismatch" not in errors.lower() and not differ:
        return []
    shown = f" (kernel module {module}, libraries {library})" if differ else ""
    said = f": {errors.strip()}" if errors.strip() else "."
    message = f"NVML reports a driver/library version mismatch{shown}{said}"
    fix = Fix(INIT_ERRORS[1][2])
    return [rules.NvmlDriverLibraryMismatch.finding(message, fix=fix)]


def check_nvidia_uvm(probe: Probe) -> list[Finding]:
    names = dev_nvidia(probe)
    if "nvidia0" not in names or "nvidia-uvm" in names or stage(probe, "host").get("wsl"):
        return []
    message = "/dev/nvidia0 exists but /dev/nvidia-uvm does not; CUDA cannot initialise."
    fix = Fix(
        "Run `sudo modprobe nvidia-uvm && sudo nvidia-modprobe -u -c=0`; in a container, pass "
        "`--device /dev/nvidia-uvm` or start it with `--gpus all`."
    )
    return [rules.NvidiaUvmDeviceMissing.finding(message, fix=fix)]


def check_driver_not_loaded(probe: Probe) -> list[Finding]:
    """An NVIDIA PCI device with no driver (CUDA's own "no driver" text is check_cuda_init's)."""
    host = stage(probe, "host")
    if cuda_init_error(probe) or host.get("wsl") or not nvidia_present(probe):
        return []
    if driver_version(probe) or dev_nvidia(probe) or host.get("container"):
        return []  # loaded; or a container, which is check_container's business
    message = (
        "An NVIDIA GPU is present, but no NVIDIA kernel driver is loaded "
        "(no /proc/driver/nvidia, no /dev/nvidia*)."
    )
    return [rules.NvidiaDriverNotLoaded.finding(message, fix=Fix(INIT_ERRORS[0][2]))]


def _stray(folder: str, libs: list[str], wsl: bool) -> list[str]:
    if wsl and os.path.normpath(folder) == WSL_LIB:
        return []
    toolkit = [n for n in libs if n.startswith(_TOOLKIT_LIBS)]
    compat = [n for n in libs if n.startswith("libcuda.so") and "compat" in folder]
    return toolkit + compat


def check_stray_libraries(probe: Probe) -> list[Finding]:
    host = stage(probe, "host")
    if torch_build(probe) != "cuda":
        return []
    findings = []
    for entry in host.get("cuda_libs_on_ld_library_path") or []:
        folder, libs = str(entry.get("dir")), [str(n) for n in entry.get("libs") or []]
        stray = _stray(folder, libs, bool(host.get("wsl")))
        if stray:
            message = (
                f"LD_LIBRARY_PATH folder {folder} has CUDA libraries ({', '.join(stray[:4])}) "
                "that can be loaded instead of the ones torch was built with."
            )
            fix = Fix(f"Remove {folder} from LD_LIBRARY_PATH for Python processes.")
            findings.append(
                rules.StrayCudaLibrariesOnLdLibraryPath.finding(message, fix=fix, dir=folder)
            )
    return findings


def check_wsl_libcuda(probe: Probe) -> list[Finding]:
    host = stage(probe, "host")
    if not host.get("wsl"):
        return []
    findings = []
    for entry in host.get("cuda_libs_on_ld_library_path") or []:
        folder = str(entry.get("dir"))
        libs = [n for n in entry.get("libs") or [] if str(n).startswith("libcuda.so")]
        if libs and os.path.normpath(folder) != WSL_LIB:
            message = f"In WSL, {folder}/{libs[0]} on LD_LIBRARY_PATH shadows {WSL_LIB}/libcuda.so."
            fix = Fix(f"Remove {folder} from LD_LIBRARY_PATH and keep {WSL_LIB} first.")
            findings.append(rules.WslLibcudaShadowed.finding(message, fix=fix, dir=folder))
    return findings


CHECKS = (
    check_cuda_init,
    check_cuda_visible_devices,
    check_nvml_mismatch,
    check_nvidia_uvm,
    check_driver_not_loaded,
    check_stray_libraries,
    check_wsl_libcuda,
)
