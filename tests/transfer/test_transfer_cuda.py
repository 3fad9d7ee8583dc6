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

import pytest
import torch
from transfer_support import CASTS, assert_matches_cpu_reference, make_batch

from torchport.transfer import DeviceLoader, to_device
from torchport.transfer._cuda import CudaStage
from torchport.transfer._to_device import Mover

pytestmark = pytest.mark.cuda


def test_to_device_matches_cpu_values() -> None:
    source = make_batch(0)
    assert_matches_cpu_reference(
        to_device(source, "cuda", dtype=CASTS), source, torch.device("cuda", 0)
    )


@pytest.mark.parametrize("prefetch", [1, 2, 4])
def test_loader_batches_match_cpu_reference_while_consumer_writes(prefetch: int) -> None:
    sources = [make_batch(i) for i in range(12)]
    loader = DeviceLoader(sources, "cuda", prefetch=prefetch, dtype=CASTS)
    for got, source in zip(loader, sources, strict=True):
        assert_matches_cpu_reference(got, source, torch.device("cuda", torch.cuda.current_device()))
        # Work on the consumer stream that overwrites and frees memory while copies are queued.
        for t in got["small"]:
            t.mul_(0).add_(torch.randn_like(t))
    assert got["pair"].b == "name"


def test_early_break_leaves_no_thread_and_no_pending_copy() -> None:
    for i, _ in enumerate(DeviceLoader([make_batch(i) for i in range(8)], "cuda", prefetch=3)):
        if i == 1:
            break
    torch.cuda.synchronize()
    assert not [t for t in threading.enumerate() if t.name == "torchport-prefetch"]


def test_reserved_memory_does_not_drift_across_epochs() -> None:
    loader = DeviceLoader([make_batch(i) for i in range(20)], "cuda", prefetch=2, dtype=CASTS)
    for _ in loader:
        pass
    torch.cuda.synchronize()
    reserved = torch.cuda.memory_reserved()
    for _ in range(5):
        for batch in loader:
            batch["small"][0].add_(1)
    torch.cuda.synchronize()
    assert torch.cuda.memory_reserved() == reserved


def test_the_next_batch_is_copied_while_the_current_step_still_runs() -> None:
    device = torch.device("cuda", torch.cuda.current_device())
    mover = Mover(device, None, None)
    stage = CudaStage(device, torch.cuda.Stream(device), {}, mover, depth=1)
    batches = [{"x": torch.randn(1 << 16) + i} for i in range(2)]
    first = stage.deliver(stage.produce(batches[0]), 0)  # nothing queued behind it
    torch.cuda._sleep(200_000_000)  # the training step: ~0.1 s of GPU time on the consumer
    second = stage.produce(batches[1])
    second.ready.synchronize()  # the copy of batch 2 has landed ...
    step_done = torch.cuda.current_stream(device).query()
    torch.cuda.synchronize(device)
    assert not step_done  # ... while the step was still running: it did not wait for it
    assert torch.equal(stage.deliver(second, 0)["x"].cpu(), batches[1]["x"])
    assert torch.equal(first["x"].cpu(), batches[0]["x"])


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
