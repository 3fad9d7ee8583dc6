"""The smoke test the probe runs on a usable accelerator: a matmul and host-to-device bandwidth.

It runs inside the probe subprocess (so the doctor's timeout covers it). Device choice and the
arithmetic are plain functions so they can be tested without a GPU; torch is imported lazily.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

MATMUL_SIZE = 2048
COPY_BYTES = 64 * 2**20
REPEATS = 5


def pick_device(results: dict[str, Any]) -> str | None:
    """The accelerator the probe found usable, as a torch device string, or None."""
    cuda = results.get("cuda") or {}
    if cuda.get("init_error") is None and cuda.get("device_count", 0) > 0:
        return "cuda:0"
    if (results.get("mps") or {}).get("available"):
        return "mps"
    if (results.get("xpu") or {}).get("available"):
        return "xpu:0"
    return None


def gbps(nbytes: int, seconds: float) -> float:
    """Throughput in GB/s (10**9 bytes per second, as bandwidth is quoted)."""
    return nbytes / seconds / 1e9 if seconds > 0 else 0.0


def best_seconds(work: Callable[[], object], sync: Callable[[], None], repeats: int) -> float:
    """The fastest of ``repeats`` timed runs of ``work`` (after one warm-up), synchronised."""
    work()
    sync()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        sync()
        best = min(best, time.perf_counter() - start)
    return best


def matmul_check(device: str, size: int = MATMUL_SIZE) -> dict[str, Any]:
    """Multiply on ``device``, compare with the CPU result, and time it in TFLOP/s."""
    import torch

    dev = torch.device(device)
    a, b = torch.randn(size, size), torch.randn(size, size)
    expected = a @ b
    a_dev, b_dev = a.to(dev), b.to(dev)
    got = (a_dev @ b_dev).cpu()
    # Relative to the result's scale, so TF32 (about 1e-3) passes and garbage does not.
    error = float((got - expected).abs().max() / expected.abs().max())
    seconds = best_seconds(lambda: a_dev @ b_dev, lambda: _sync(dev), REPEATS)
    return {
        "size": size,
        "max_relative_error": error,
        "correct": error < 1e-2,
        "tflops": 2 * size**3 / seconds / 1e12 if seconds > 0 else 0.0,
    }


def copy_bandwidth(device: str, nbytes: int = COPY_BYTES) -> dict[str, Any]:
    """Host-to-device GB/s from pageable memory, and from pinned memory where CUDA offers it."""
    import torch

    dev = torch.device(device)
    host = torch.empty(nbytes, dtype=torch.uint8)
    result: dict[str, Any] = {"bytes": nbytes}
    seconds = best_seconds(lambda: host.to(dev), lambda: _sync(dev), REPEATS)
    result["pageable_gbps"] = gbps(nbytes, seconds)
    if dev.type == "cuda":
        pinned = host.pin_memory()
        seconds = best_seconds(
            lambda: pinned.to(dev, non_blocking=True), lambda: _sync(dev), REPEATS
        )
        result["pinned_gbps"] = gbps(nbytes, seconds)
    return result


def _sync(dev: Any) -> None:
    import torch

    module = getattr(torch, dev.type, None)
    if module is not None and hasattr(module, "synchronize"):
        module.synchronize()


def run_smoke(results: dict[str, Any], device: str | None = None) -> dict[str, Any]:
    """Smoke-test the usable accelerator; every failure is recorded, never raised."""
    device = device or pick_device(results)
    if device is None:
        return {"skipped": "no usable accelerator"}
    report: dict[str, Any] = {"device": device}
    for name, step in (("matmul", matmul_check), ("h2d", copy_bandwidth)):
        try:
            report[name] = step(device)
        except Exception as exc:  # noqa: BLE001 - "no kernel image" and friends are findings
            report[name] = {"error": f"{type(exc).__name__}: {exc}"}
    return report
