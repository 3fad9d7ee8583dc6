"""Which device to run on: ``TORCHPORT_DEVICE`` if set, else the best accelerator, else the CPU."""

from __future__ import annotations

import os

import torch

ENV_VAR = "TORCHPORT_DEVICE"
DeviceLike = torch.device | str | int


def default_device() -> torch.device:
    """The device torchport moves work to.

    ``TORCHPORT_DEVICE`` (e.g. ``cpu``, ``cuda:1``, ``mps``) wins when set; it must name a device
    that is usable here, so that a typo or a missing GPU fails loudly instead of silently running
    on the CPU. Otherwise the current accelerator (CUDA, MPS, XPU, ...) as ``torch.accelerator``
    reports it, or on older torch the first of CUDA, MPS and XPU that is available, else the CPU.
    """
    override = os.environ.get(ENV_VAR, "").strip()
    if override:
        return _checked_override(override)
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None:
        found = accelerator.current_accelerator() if accelerator.is_available() else None
        if found is None:
            return torch.device("cpu")
        return torch.device(found.type, accelerator.current_device_index())
    return _legacy_probe()


def _legacy_probe() -> torch.device:
    # torch < 2.6 has no torch.accelerator: probe the backends one by one.
    if torch.cuda.is_available():
        return torch.device("cuda", torch.cuda.current_device())
    if torch.backends.mps.is_available():
        return torch.device("mps")
    xpu = getattr(torch, "xpu", None)
    if xpu is not None and xpu.is_available():
        return torch.device("xpu", xpu.current_device())
    return torch.device("cpu")


def _checked_override(text: str) -> torch.device:
    try:
        device = torch.device(text)
    except (RuntimeError, ValueError):
        raise ValueError(
            f"{ENV_VAR}={text!r} is not a device; use e.g. cpu, cuda, cuda:1, mps or xpu"
        ) from None
    problem = _unusable(device)
    if problem:
        raise RuntimeError(f"{ENV_VAR}={text!r} names a device that is not usable here: {problem}")
    return device


def _unusable(device: torch.device) -> str | None:
    """Why ``device`` cannot be used on this machine, or None when it can."""
    if device.type in ("cpu", "meta"):
        return None
    backend = {"cuda": torch.cuda, "mps": torch.backends.mps, "xpu": getattr(torch, "xpu", None)}
    module = backend.get(device.type)
    if module is None:
        return f"torchport does not know how to check {device.type!r} devices"
    if not module.is_available():
        return f"torch.{device.type} reports no available device (torch {torch.__version__})"
    count = getattr(module, "device_count", lambda: 1)()
    if device.index is not None and device.index >= count:
        return f"index {device.index} is out of range: {count} {device.type} device(s) visible"
    return None
