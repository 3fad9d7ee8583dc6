"""Measurements against the machine's own ceiling: host<->device bandwidth, loader throughput.

Results are plain dicts (JSON-ready), so that the CLI, ``--json`` and the benchmarks scripts show
the same figures.
"""

from __future__ import annotations

from torchport.bench.loader import LoaderSpec, measure_loader
from torchport.bench.transfer import measure_transfer, parse_size

__all__ = ["LoaderSpec", "measure_loader", "measure_transfer", "parse_size"]
