"""The batch and the CPU reference the CUDA stage is checked with, on a GPU or simulated."""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import torch

from torchport.transfer import to_device

Pair = namedtuple("Pair", ["a", "b"])
CASTS = {torch.float64: torch.float32, torch.uint8: torch.float32}


def make_batch(i: int) -> dict[str, Any]:
    generator = torch.Generator().manual_seed(i)
    return {
        "small": [torch.randn(64, generator=generator) + i for _ in range(40)],
        "big_pinned": torch.randn(1 << 19, generator=generator).pin_memory(),  # 2 MiB: direct
        "transposed": torch.randn(8, 16, dtype=torch.float64, generator=generator).t(),
        "image": torch.randint(0, 255, (3, 4, 4), dtype=torch.uint8, generator=generator),
        "label": torch.tensor(i),
        "pair": Pair(torch.ones(3) * i, "name"),
        "grad": torch.ones(2, requires_grad=True),
    }


def _flat(obj: Any) -> list[torch.Tensor]:
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, dict):
        return [t for v in obj.values() for t in _flat(v)]
    if isinstance(obj, (list, tuple)):
        return [t for v in obj for t in _flat(v)]
    return []


def assert_matches_cpu_reference(got: Any, source: Any, device: torch.device) -> None:
    expected = to_device(source, "cpu", dtype=CASTS)
    for g, e in zip(_flat(got), _flat(expected), strict=True):
        assert g.device == device and g.dtype == e.dtype and g.shape == e.shape
        assert torch.equal(g.detach().cpu(), e.detach())
