"""TP5xx diagnoses about the installed torch build and its packages (``torchport doctor``).

The rest of the TP5 family (driver, devices, containers, host) is in ``environment.py``; the
detectors of these are in ``torchport.doctor.checks_build``. "Example" shows the symptom a user
sees, "Use instead" the fix the doctor prints.
"""

from __future__ import annotations

from torchport.findings import Severity
from torchport.rules.registry import Rule, register


@register
class CpuOnlyTorchWithNvidiaGpu(Rule):
    """## What it does
    Flags a CPU-only torch build on a machine that has an NVIDIA GPU.

    ## Why is this bad?
    The GPU is never used: `torch.version.cuda` is None and `torch.cuda.is_available()` is False.
    pip on Windows and conda's `cpuonly` package install CPU builds by default.

    ## Use instead
    `pip install --force-reinstall torch --index-url https://download.pytorch.org/whl/cu126`
    (the doctor picks the CUDA version the driver supports).
    """

    code, name, severity = "TP501", "cpu-only-torch-with-nvidia-gpu", Severity.ERROR


@register
class DriverOlderThanWheelCuda(Rule):
    """## What it does
    Flags an NVIDIA driver older than the minimum the wheel's CUDA runtime needs.

    ## Why is this bad?
    CUDA fails to initialise ("The NVIDIA driver on your system is too old"). Minimum Linux
    drivers (minor-version compatibility floor): CUDA 11.8 450.80.02, 12.x 525.60.13, 13.0 580.

    ## Use instead
    Upgrade the driver, or install a wheel built for an older CUDA.

    ## References
    - https://docs.nvidia.com/deploy/cuda-compatibility/
    """

    code, name, severity = "TP502", "driver-older-than-wheel-cuda", Severity.ERROR


@register
class DriverBelowToolkitDriver(Rule):
    """## What it does
    Notes a driver that runs the wheel only through CUDA minor-version compatibility.

    ## Why is this bad?
    The driver is older than the one released with the wheel's CUDA toolkit (for example 12.8
    needs 570.26). Most kernels work, but PTX just-in-time compilation and new features fail.

    ## Use instead
    Upgrade the driver to the toolkit's driver or newer.
    """

    code, name, severity = "TP503", "driver-below-toolkit-driver", Severity.INFO


@register
class GpuArchNotInWheel(Rule):
    """## What it does
    Flags a GPU whose compute capability is not in the wheel's `torch.cuda.get_arch_list()`.

    ## Why is this bad?
    `is_available()` is True, but every kernel fails with "no kernel image is available for
    execution on the device" (pytorch#167244). New GPUs need wheels for newer CUDA.

    ## Use instead
    Install a wheel built for a newer CUDA whose arch list includes the GPU's `sm_XY`.
    """

    code, name, severity = "TP504", "gpu-arch-not-in-wheel", Severity.ERROR


@register
class GpuOlderThanWheel(Rule):
    """## What it does
    Flags a GPU older than the oldest architecture the wheel (or any current wheel) supports.

    ## Why is this bad?
    Current wheels drop old architectures; the GPU cannot run their kernels.

    ## Use instead
    Install an older torch release whose arch list has the GPU's `sm_XY`, or build from source
    with `TORCH_CUDA_ARCH_LIST`.
    """

    code, name, severity = "TP505", "gpu-older-than-wheel", Severity.ERROR


@register
class SeveralTorchInstalls(Rule):
    """## What it does
    Flags more than one installed `torch` distribution visible to this Python.

    ## Why is this bad?
    Which one is imported depends on `sys.path`; upgrades and CUDA wheels seem to have no effect.

    ## Use instead
    `pip uninstall -y torch` until none is left, then install one.
    """

    code, name, severity = "TP520", "several-torch-installs", Severity.WARNING


@register
class MixedPipCondaTorch(Rule):
    """## What it does
    Flags torch installed by both conda and pip in one environment.

    ## Why is this bad?
    The two overwrite each other's files and CUDA libraries; conda's `cpuonly` pins CPU builds.

    ## Use instead
    `conda remove pytorch cpuonly` and keep the pip install (or the reverse).
    """

    code, name, severity = "TP521", "mixed-pip-conda-torch", Severity.WARNING


@register
class Numpy2WithTorchBefore23(Rule):
    """## What it does
    Flags NumPy 2 with torch older than 2.3.

    ## Why is this bad?
    Those wheels were compiled against NumPy 1: "A module that was compiled using NumPy 1.x
    cannot be run in NumPy 2", and `tensor.numpy()` fails.

    ## Use instead
    `pip install "numpy<2"`, or upgrade torch to 2.3 or newer.
    """

    code, name, severity = "TP522", "numpy2-with-torch-before-2-3", Severity.ERROR


@register
class CompanionCudaMismatch(Rule):
    """## What it does
    Flags torchvision or torchaudio built for another CUDA (or CPU) than torch.

    ## Why is this bad?
    Their compiled operators fail to load ("Detected that PyTorch and torchvision were compiled
    with different CUDA major versions") or run on the CPU.

    ## Use instead
    Reinstall them from torch's index, e.g. `--index-url https://download.pytorch.org/whl/cu126`.
    """

    code, name, severity = "TP523", "companion-cuda-mismatch", Severity.ERROR


@register
class CompanionVersionMismatch(Rule):
    """## What it does
    Flags torchvision or torchaudio made for another torch release (torch 2.N pairs with
    torchvision 0.(N+15) and torchaudio 2.N).

    ## Why is this bad?
    Their compiled operators are built against another torch ABI and fail to load.

    ## Use instead
    Install the matching release, e.g. torch 2.5 with torchvision 0.20 and torchaudio 2.5.
    """

    code, name, severity = "TP524", "companion-version-mismatch", Severity.WARNING


@register
class TorchImportFailed(Rule):
    """## What it does
    Flags `import torch` raising an exception.

    ## Why is this bad?
    Nothing works; the error usually names a missing shared library or a broken install.

    ## Use instead
    `pip install --force-reinstall torch` (from the index for your CUDA).
    """

    code, name, severity = "TP532", "torch-import-failed", Severity.ERROR


@register
class LocalTorchShadowsInstall(Rule):
    """## What it does
    Flags a folder named `torch` (with an `__init__.py`) or a `torch.py` file that
    `import torch` would load instead of the installed torch: one in the working directory, or
    in a `sys.path` entry (from `PYTHONPATH`, say) that comes before the install. The doctor
    finds it by looking, never by importing it, and probes the installed torch all the same.

    ## Why is this bad?
    Every script run from that folder (or with such a file beside it) imports the local file:
    `torch.cuda`, `torch.nn` and the rest are missing, or it is an old copy of PyTorch's sources,
    and errors such as "module 'torch' has no attribute 'cuda'" make the install look broken
    when it is not.

    ## Example
    ```console
    $ ls
    torch/  train.py
    $ python train.py
    AttributeError: module 'torch' has no attribute 'cuda'
    ```

    ## Use instead
    Rename the local folder or file (for example to `torch_utils`), or run your scripts from
    another folder; `python -c "import torch; print(torch.__file__)"` then prints the installed
    torch's path.
    """

    code, name, severity = "TP534", "local-torch-shadows-install", Severity.ERROR
