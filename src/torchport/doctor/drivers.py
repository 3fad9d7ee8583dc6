"""Which NVIDIA driver a CUDA runtime needs, and which PyTorch wheel a driver can run (Linux).

Figures from NVIDIA's CUDA compatibility tables (see ANCHORS.md): for each CUDA release, the
driver shipped with the toolkit, and the floor below which even minor-version compatibility fails.
"""

from __future__ import annotations

from torchport.doctor.facts import cuda_tag, version_tuple

# CUDA version -> (toolkit driver, minor-version-compatibility floor)
DRIVER_TABLE: dict[tuple[int, int], tuple[str, str]] = {
    (11, 8): ("520.61.05", "450.80.02"),
    (12, 1): ("530.30.02", "525.60.13"),
    (12, 4): ("550.54.14", "525.60.13"),
    (12, 6): ("560.28.03", "525.60.13"),
    (12, 8): ("570.26", "525.60.13"),
    (12, 9): ("575.51.03", "525.60.13"),
    (13, 0): ("580.65.06", "580"),
}
# CUDA versions of the wheels PyTorch currently publishes, newest first.
WHEEL_CUDAS: tuple[tuple[int, int], ...] = ((13, 0), (12, 8), (12, 6), (11, 8))
INDEX_URL = "https://download.pytorch.org/whl/{tag}"


def requirement(cuda: tuple[int, ...]) -> tuple[str, str] | None:
    """(toolkit driver, floor) for a CUDA version; unlisted minors use the nearest lower entry."""
    if len(cuda) < 2:
        return None
    key = (cuda[0], cuda[1])
    listed = [v for v in DRIVER_TABLE if v[0] == key[0] and v <= key]
    if not listed:
        return None
    return DRIVER_TABLE[max(listed)]


def best_wheel_cuda(driver: str | None) -> tuple[int, int] | None:
    """The published wheel CUDA to recommend for a driver, or None when it is too old for all.

    Among the CUDA versions whose floor the driver meets, take the newest major version; within
    it, the newest the driver fully supports, else the oldest (the least reliance on
    minor-version compatibility).
    """
    have = version_tuple(driver)
    if not have:
        return WHEEL_CUDAS[-2]  # driver unknown: the widely supported 12.x wheel
    runnable = [c for c in WHEEL_CUDAS if have >= version_tuple(DRIVER_TABLE[c][1])]
    if not runnable:
        return None
    major = [c for c in runnable if c[0] == runnable[0][0]]
    full = [c for c in major if have >= version_tuple(DRIVER_TABLE[c][0])]
    return full[0] if full else major[-1]


def wheel_for_driver_cuda(driver_cuda: tuple[int, int]) -> tuple[int, int] | None:
    """The wheel CUDA to recommend when only the driver's CUDA version is known (same rule)."""
    same_major = [c for c in WHEEL_CUDAS if c[0] == driver_cuda[0]]
    full = [c for c in same_major if c <= driver_cuda]
    return full[0] if full else (same_major[-1] if same_major else None)


def install_command(cuda: tuple[int, int], packages: list[str]) -> str:
    """The pip command that replaces ``packages`` by builds for ``cuda``."""
    url = INDEX_URL.format(tag=cuda_tag(cuda))
    return f"pip install --force-reinstall {' '.join(packages)} --index-url {url}"
