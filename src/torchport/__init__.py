"""torchport: make PyTorch code written for the CPU run correctly and fast on a GPU.

The public API is imported lazily so that ``torchport --version`` and ``--help`` never import
torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from torchport._version import __version__

_LAZY = {
    "DeviceLoader": "torchport.transfer",
    "Finding": "torchport.findings",
    "Fix": "torchport.findings",
    "Location": "torchport.findings",
    "Severity": "torchport.findings",
    "default_device": "torchport.transfer",
    "to_device": "torchport.transfer",
    "watch": "torchport.runtime",
}

__all__ = [
    "DeviceLoader",
    "Finding",
    "Fix",
    "Location",
    "Severity",
    "__version__",
    "default_device",
    "to_device",
    "watch",
]

if TYPE_CHECKING:
    from torchport.findings import Finding, Fix, Location, Severity
    from torchport.runtime import watch
    from torchport.transfer import DeviceLoader, default_device, to_device


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'torchport' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
