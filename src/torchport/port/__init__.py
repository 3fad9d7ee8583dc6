"""``torchport port``: rewrite CPU-only PyTorch code into device-agnostic, fast GPU code.

The public entry points are :func:`port_source` (one file's text) and :func:`port_paths`
(files and folders, with the diff or an atomic write). The port never executes user code.
"""

from __future__ import annotations

from torchport.port.core import PortResult, port_source, port_sources
from torchport.port.options import PortOptions

__all__ = ["PortOptions", "PortResult", "port_source", "port_sources"]
