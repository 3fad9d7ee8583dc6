"""TP5xx: the environment (``torchport doctor``). Each rule is one diagnosis over probe values.

The diagnoses about the installed torch build and its packages are in ``build.py``.

The detectors live in ``torchport.doctor``; these classes carry the code, name, severity and
documentation. "Example" shows the symptom a user sees, "Use instead" the fix the doctor prints.
"""

from __future__ import annotations

from torchport.findings import Severity
from torchport.rules.registry import Rule, register


@register
class CudaVisibleDevicesHidesGpus(Rule):
    """## What it does
    Flags `CUDA_VISIBLE_DEVICES` set so that no GPU is visible (empty, -1, or unknown indices).

    ## Why is this bad?
    CUDA sees zero devices. Setting it after CUDA initialised has no effect either.

    ## Use instead
    `unset CUDA_VISIBLE_DEVICES`, or `export CUDA_VISIBLE_DEVICES=0` before starting Python.
    """

    code, name, severity = "TP506", "cuda-visible-devices-hides-gpus", Severity.ERROR


@register
class ContainerWithoutGpuAccess(Rule):
    """## What it does
    Flags a container with a CUDA build of torch but no `/dev/nvidia*` device files.

    ## Why is this bad?
    The container was started without GPU access, so CUDA finds no driver.

    ## Use instead
    `docker run --gpus all ...` (needs the NVIDIA Container Toolkit), `podman run --device
    nvidia.com/gpu=all ...`, or `nvidia.com/gpu: 1` in the Kubernetes resource limits.

    ## References
    - https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/
    """

    code, name, severity = "TP507", "container-without-gpu-access", Severity.ERROR


@register
class WslGpuNotExposed(Rule):
    """## What it does
    Flags WSL without GPU paravirtualisation (`/dev/dxg` or `/usr/lib/wsl/lib/libcuda.so`).

    ## Why is this bad?
    In WSL the Windows driver provides CUDA; without it CUDA finds no device.

    ## Use instead
    Install the current NVIDIA driver on Windows, run `wsl --update` and use WSL 2
    (`wsl --set-version <distro> 2`). Do not install a Linux NVIDIA driver inside WSL.
    """

    code, name, severity = "TP508", "wsl-gpu-not-exposed", Severity.ERROR


@register
class WslLibcudaShadowed(Rule):
    """## What it does
    Flags a `libcuda.so` on `LD_LIBRARY_PATH` in WSL outside `/usr/lib/wsl/lib`.

    ## Why is this bad?
    Only WSL's own `libcuda.so` talks to the Windows driver; another one (from a Linux driver or
    a CUDA toolkit's stubs) makes CUDA fail to initialise.

    ## Use instead
    Remove that folder from `LD_LIBRARY_PATH` (keep `/usr/lib/wsl/lib` first).
    """

    code, name, severity = "TP509", "wsl-libcuda-shadowed", Severity.WARNING


@register
class NvmlDriverLibraryMismatch(Rule):
    """## What it does
    Flags "Driver/library version mismatch": the loaded kernel module differs from user space.

    ## Why is this bad?
    After a driver upgrade without a reboot, NVML and CUDA refuse to start.

    ## Use instead
    Reboot, or reload the module: `sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia &&
    sudo modprobe nvidia`.
    """

    code, name, severity = "TP510", "nvml-driver-library-mismatch", Severity.ERROR


@register
class NvidiaUvmDeviceMissing(Rule):
    """## What it does
    Flags `/dev/nvidia0` present without `/dev/nvidia-uvm`.

    ## Why is this bad?
    CUDA needs the unified-memory device; without it initialisation fails, often as
    "CUDA unknown error".

    ## Use instead
    `sudo modprobe nvidia-uvm && sudo nvidia-modprobe -u -c=0`; in a container, pass
    `--device /dev/nvidia-uvm` (or use `--gpus all`).
    """

    code, name, severity = "TP511", "nvidia-uvm-device-missing", Severity.ERROR


@register
class NvidiaDriverNotLoaded(Rule):
    """## What it does
    Flags "Found no NVIDIA driver on your system", or an NVIDIA PCI device with no driver loaded.

    ## Why is this bad?
    Without the kernel driver CUDA cannot start.

    ## Use instead
    Install the driver (Ubuntu: `sudo ubuntu-drivers install`), reboot, check `nvidia-smi`.
    """

    code, name, severity = "TP512", "nvidia-driver-not-loaded", Severity.ERROR


@register
class CudaUnknownError(Rule):
    """## What it does
    Flags the CUDA initialisation error "CUDA unknown error".

    ## Why is this bad?
    CUDA is unusable. Usual causes: the GPU did not come back after suspend, a missing
    `/dev/nvidia-uvm`, or `CUDA_VISIBLE_DEVICES` changed after start.

    ## Use instead
    `sudo rmmod nvidia_uvm && sudo modprobe nvidia_uvm`, or reboot.
    """

    code, name, severity = "TP513", "cuda-unknown-error", Severity.ERROR


@register
class CudaSystemNotInitialized(Rule):
    """## What it does
    Flags CUDA error 802, "system not yet initialized".

    ## Why is this bad?
    On NVSwitch systems (HGX/DGX) CUDA waits for the Fabric Manager, which is not running.

    ## Use instead
    `sudo systemctl enable --now nvidia-fabricmanager` (same version as the driver).
    """

    code, name, severity = "TP514", "cuda-system-not-initialized", Severity.ERROR


@register
class CudaDriverCombinationUnsupported(Rule):
    """## What it does
    Flags CUDA error 803, "system has unsupported display driver / cuda driver combination".

    ## Why is this bad?
    The user-space `libcuda.so` does not match the kernel module, typically a `cuda-compat`
    folder on `LD_LIBRARY_PATH` or a half-finished driver upgrade.

    ## Use instead
    Remove `cuda-compat` folders from `LD_LIBRARY_PATH`, or finish the upgrade and reboot.
    """

    code, name, severity = "TP515", "cuda-driver-combination-unsupported", Severity.ERROR


@register
class CudaForwardCompatUnsupported(Rule):
    """## What it does
    Flags CUDA error 804, "forward compatibility was attempted on non supported HW".

    ## Why is this bad?
    The `cuda-compat` forward-compatibility package only works on data-centre GPUs.

    ## Use instead
    Remove `cuda-compat` from `LD_LIBRARY_PATH` and upgrade the driver instead.
    """

    code, name, severity = "TP516", "cuda-forward-compat-unsupported", Severity.ERROR


@register
class CudaDevicesBusy(Rule):
    """## What it does
    Flags "all CUDA-capable devices are busy or unavailable".

    ## Why is this bad?
    The GPU is in exclusive-process or prohibited compute mode and taken, or unavailable.

    ## Use instead
    Find the owner with `nvidia-smi`; reset the mode with `sudo nvidia-smi -c DEFAULT`.
    """

    code, name, severity = "TP517", "cuda-devices-busy", Severity.ERROR


@register
class CudaInitFailed(Rule):
    """## What it does
    Flags any other error raised by `torch.cuda.init()` on a CUDA build.

    ## Why is this bad?
    CUDA is unusable; `is_available()` hides the reason, the doctor shows it.

    ## Use instead
    Follow the error text; `dmesg | grep -i -E "nvrm|xid"` shows driver-side errors.
    """

    code, name, severity = "TP518", "cuda-init-failed", Severity.ERROR


@register
class StrayCudaLibrariesOnLdLibraryPath(Rule):
    """## What it does
    Flags CUDA libraries (libcudart, libcublas, libcudnn, cuda-compat libcuda) on
    `LD_LIBRARY_PATH` next to a torch wheel that brings its own.

    ## Why is this bad?
    They can be loaded instead of the wheel's, giving undefined symbols, wrong versions or
    CUDA errors 803/804.

    ## Use instead
    Remove those folders from `LD_LIBRARY_PATH` for the Python process.
    """

    code, name, severity = "TP519", "stray-cuda-libraries-on-ld-library-path", Severity.WARNING


@register
class MpsNotBuilt(Rule):
    """## What it does
    Flags torch without MPS support on an Apple-silicon Mac.

    ## Why is this bad?
    The GPU is unused. The usual cause is an x86_64 Python running under Rosetta.

    ## Use instead
    Install an arm64 Python (`python -c "import platform; print(platform.machine())"` prints
    `arm64`), then reinstall torch.
    """

    code, name, severity = "TP525", "mps-not-built", Severity.WARNING


@register
class MpsUnavailable(Rule):
    """## What it does
    Flags torch built with MPS where `torch.backends.mps.is_available()` is False.

    ## Why is this bad?
    MPS needs macOS 12.3 or newer and a Metal GPU; virtual machines usually have none.

    ## Use instead
    Upgrade macOS to 12.3 or newer, and run on the Mac itself.
    """

    code, name, severity = "TP526", "mps-unavailable", Severity.WARNING


@register
class XpuUnusable(Rule):
    """## What it does
    Flags a torch build with Intel XPU support where no XPU device is available.

    ## Why is this bad?
    The Intel GPU is unused: its driver (Level Zero runtime) is missing or too old.

    ## Use instead
    Install Intel's GPU driver (`intel-level-zero-gpu`, `intel-opencl-icd`) and check that
    `ZE_AFFINITY_MASK` does not hide the device.

    ## References
    - https://pytorch.org/docs/stable/notes/get_start_xpu.html
    """

    code, name, severity = "TP527", "xpu-unusable", Severity.ERROR


@register
class SmallDevShm(Rule):
    """## What it does
    Flags a `/dev/shm` smaller than 1 GiB (Docker's default is 64 MiB).

    ## Why is this bad?
    DataLoader workers pass batches through shared memory; they die with "Bus error" or
    "unable to write to file </torch_...>".

    ## Use instead
    `docker run --shm-size=8g ...` or `--ipc=host`; in Kubernetes mount an `emptyDir` with
    `medium: Memory` at `/dev/shm`.
    """

    code, name, severity = "TP528", "small-dev-shm", Severity.WARNING


@register
class Tf32NotEnabled(Rule):
    """## What it does
    Notes float32 matmul precision "highest" on a GPU with tensor cores (compute capability 8.0+).

    ## Why is this bad?
    float32 matmuls skip the tensor cores and run several times slower than with TF32.

    ## Use instead
    `torch.set_float32_matmul_precision("high")` at the start of training.
    """

    code, name, severity = "TP529", "tf32-not-enabled", Severity.INFO


@register
class ProbeTimedOut(Rule):
    """## What it does
    Flags an environment probe that did not finish within the timeout.

    ## Why is this bad?
    A probe hangs when the driver hangs (`import torch` or CUDA initialisation blocks); your
    programs will hang the same way.

    ## Use instead
    Check `dmesg` for NVRM/Xid errors and `nvidia-smi`; reset the GPU or reboot.
    """

    code, name, severity = "TP530", "probe-timed-out", Severity.ERROR


@register
class ProbeCrashed(Rule):
    """## What it does
    Flags an environment probe that died (for example a segfault inside the driver), or one of
    its stages that raised (a warning: the facts of that stage are missing).

    ## Why is this bad?
    The same crash will hit your programs.

    ## Use instead
    Rerun `python -c "import torch; torch.cuda.init()"` to see it; reinstall the driver or torch.
    """

    code, name, severity = "TP531", "probe-crashed", Severity.ERROR


@register
class GpuSmokeTestFailed(Rule):
    """## What it does
    Flags a failed smoke test: a matmul or a copy on the device raised or gave a wrong result.

    ## Why is this bad?
    The device looks available but cannot run real work.

    ## Use instead
    Follow the error; "no kernel image is available" means the wheel lacks the GPU's arch.
    """

    code, name, severity = "TP533", "gpu-smoke-test-failed", Severity.ERROR
