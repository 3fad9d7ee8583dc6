"""Runtime observation: ``torchport run`` and ``torchport.watch`` (observe, explain, simulate).

``watch`` is imported on first use: the pytest plugin lives in this package, and pytest loads
it in every session of an environment that has torchport, where torch must not be imported
unless ``--torchport`` asks for it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = ["watch"]

if TYPE_CHECKING:
    from torchport.runtime.watch import watch


def __getattr__(name: str) -> Any:
    if name != "watch":
        raise AttributeError(f"module 'torchport.runtime' has no attribute {name!r}")
    value = importlib.import_module("torchport.runtime.watch").watch
    globals()[name] = value
    return value
