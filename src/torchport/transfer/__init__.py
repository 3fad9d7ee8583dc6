"""The fast, correct path from host batches to the device.

Stand-alone: imports only torch and the standard library, so that any project can use it without
the rest of torchport.
"""

from __future__ import annotations

from torchport.transfer._device import default_device
from torchport.transfer._loader import DeviceLoader
from torchport.transfer._to_device import cast_table, to_device

__all__ = ["DeviceLoader", "cast_table", "default_device", "to_device"]
