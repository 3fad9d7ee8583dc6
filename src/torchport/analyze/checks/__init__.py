"""Static detectors, one per rule, grouped by family; importing this package registers them."""

from torchport.analyze.checks import device, device_api, distributed, dtype, transfer
from torchport.analyze.checks.base import DETECTORS, Analysis, detector

__all__ = [
    "DETECTORS",
    "Analysis",
    "detector",
    "device",
    "device_api",
    "distributed",
    "dtype",
    "transfer",
]
