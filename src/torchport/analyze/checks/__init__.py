"""Static detectors, one per rule, grouped by family; importing this package registers them."""

from torchport.analyze.checks import (
    amp,
    amp_checkpoint,
    checkpoint_keys,
    device,
    device_api,
    device_ops,
    device_state,
    distributed,
    dtype,
    kernels,
    precision,
    ranks,
    scaler_steps,
    syncs,
    transfer,
    wrapping,
)
from torchport.analyze.checks.base import DETECTORS, Analysis, detector

__all__ = [
    "DETECTORS",
    "Analysis",
    "amp",
    "amp_checkpoint",
    "checkpoint_keys",
    "detector",
    "device",
    "device_api",
    "device_ops",
    "device_state",
    "distributed",
    "dtype",
    "kernels",
    "precision",
    "ranks",
    "scaler_steps",
    "syncs",
    "transfer",
    "wrapping",
]
