"""DeviceLoader and to_device on a real GPU, checked against a CPU reference.

Also meant to be run as a whole under ``TORCH_CUDA_SANITIZER=1``; the last test does that for
one loop in a subprocess.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from collections import namedtuple
from typing import Any

import pytest
import torch

from torchport.transfer import DeviceLoader, to_device

pytestmark = pytest.mark.cuda
Pair = namedtuple("Pair", ["a", "b"])
CASTS = {torch.float64: torch.float32, torch.uint8: torch.float32}


def _batch(i: int) -> dict[str, Any]:
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


def _assert_matches_cpu_reference(got: Any, source: Any, device: torch.device) -> None:
    expected = to_device(source, "cpu", dtype=CASTS)
    for g, e in zip(_flat(got), _flat(expected), strict=True):
        assert g.device == device and g.dtype == e.dtype and g.shape == e.shape
        assert torch.equal(g.detach().cpu(), e.detach())


def test_to_device_matches_cpu_values() -> None:
    source = _batch(0)
    _assert_matches_cpu_reference(
        to_device(source, "cuda", dtype=CASTS), source, torch.device("cuda", 0)
    )


@pytest.mark.parametrize("prefetch", [1, 2, 4])
def test_loader_batches_match_cpu_reference_while_consumer_writes(prefetch: int) -> None:
    sources = [_batch(i) for i in range(12)]
    loader = DeviceLoader(sources, "cuda", prefetch=prefetch, dtype=CASTS)
    for got, source in zip(loader, sources, strict=True):
        _assert_matches_cpu_reference(
            got, source, torch.device("cuda", torch.cuda.current_device())
        )
        # Work on the consumer stream that overwrites and frees memory while copies are queued.
        for t in got["small"]:
            t.mul_(0).add_(torch.randn_like(t))
    assert got["pair"].b == "name"


def test_early_break_leaves_no_thread_and_no_pending_copy() -> None:
    for i, _ in enumerate(DeviceLoader([_batch(i) for i in range(8)], "cuda", prefetch=3)):
        if i == 1:
            break
    torch.cuda.synchronize()
    assert not [t for t in threading.enumerate() if t.name == "torchport-prefetch"]


def test_reserved_memory_does_not_drift_across_epochs() -> None:
    loader = DeviceLoader([_batch(i) for i in range(20)], "cuda", prefetch=2, dtype=CASTS)
    for _ in loader:
        pass
    torch.cuda.synchronize()
    reserved = torch.cuda.memory_reserved()
    for _ in range(5):
        for batch in loader:
            batch["small"][0].add_(1)
    torch.cuda.synchronize()
    assert torch.cuda.memory_reserved() == reserved


def test_loop_runs_clean_under_cuda_sanitizer() -> None:
    script = textwrap.dedent(
        """
        import torch
        from torchport.transfer import DeviceLoader
        batches = [{"x": torch.randn(256) + i, "y": torch.randn(1 << 19).pin_memory()}
                   for i in range(16)]
        for i, b in enumerate(DeviceLoader(batches, "cuda", prefetch=2, dtype=torch.float16)):
            b["x"].mul_(2)
            assert torch.allclose(b["x"].float().cpu(), (batches[i]["x"] * 2).half().float())
        torch.cuda.synchronize()
        """
    )
    env = {**os.environ, "TORCH_CUDA_SANITIZER": "1"}
    done = subprocess.run(
        [sys.executable, "-c", script], check=False, capture_output=True, text=True, env=env
    )
    assert done.returncode == 0 and "CSAN" not in done.stderr, done.stderr[-3000:]
