"""DeviceLoader's CUDA stage, run end to end on a simulated GPU (``background=True`` under
``watch(simulate="cuda")``; on a CPU-only build it is otherwise off).

The simulation makes streams and events synchronous, so these tests cannot see an ordering
mistake between streams (``test_transfer_cuda.py`` is for that, on a GPU). What they pin is
everything else the CUDA stage does: the pinned staging buffers, packing many leaves into one
copy, the direct copy of large pinned leaves, casts on the device, what it leaves to the consumer
(``.to()`` owners, tensors needing grad), and shutdown.
"""

from __future__ import annotations

import concurrent.futures
import threading

import pytest
import torch
from transfer_support import CASTS, assert_matches_cpu_reference, make_batch

from torchport.runtime import watch
from torchport.runtime.simtensor import SimTensor
from torchport.transfer import DeviceLoader
from torchport.transfer._cuda import CudaStage

CUDA0 = torch.device("cuda", 0)


@pytest.mark.parametrize("prefetch", [1, 2, 4])
def test_cuda_stage_batches_match_the_cpu_reference(
    prefetch: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    produced = []
    original = CudaStage.produce

    def produce(stage: CudaStage, batch: object) -> object:
        produced.append(threading.current_thread().name)
        return original(stage, batch)

    monkeypatch.setattr(CudaStage, "produce", produce)
    with watch(simulate="cuda"):
        sources = [make_batch(i) for i in range(6)]
        loader = DeviceLoader(sources, "cuda", prefetch=prefetch, dtype=CASTS, background=True)
        for got, source in zip(loader, sources, strict=True):
            assert_matches_cpu_reference(got, source, CUDA0)
            assert isinstance(got["small"][0], SimTensor)
            assert got["pair"].b == "name" and got["grad"].requires_grad
            for t in got["small"]:  # the consumer writes into what it was given
                t.mul_(0)
    assert produced == ["torchport-prefetch"] * 6


def test_a_source_error_reaches_the_loop_and_no_thread_is_left() -> None:
    def source() -> object:
        yield make_batch(0)
        raise KeyError("sample 7")

    with watch(simulate="cuda"), pytest.raises(KeyError, match="sample 7"):
        for _ in DeviceLoader(source(), "cuda", background=True):
            pass
    assert not [t for t in threading.enumerate() if t.name == "torchport-prefetch"]


def test_breaking_out_early_stops_the_thread() -> None:
    with watch(simulate="cuda"):
        batches = [make_batch(i) for i in range(8)]
        loader = iter(DeviceLoader(batches, "cuda", prefetch=3, background=True))
        next(loader)
        loader.close()  # what leaving a for loop does, through garbage collection
    assert not [t for t in threading.enumerate() if t.name == "torchport-prefetch"]


def test_threads_started_in_a_simulated_block_use_the_simulated_device() -> None:
    seen: list[torch.device] = []
    original_start = threading.Thread.start
    with watch(simulate="cuda"):
        worker = threading.Thread(target=lambda: seen.append(torch.ones(2).to("cuda").device))
        worker.start()
        worker.join()
    assert seen == [CUDA0]
    assert threading.Thread.start is original_start


def test_a_thread_that_outlives_the_simulated_block_stops_simulating() -> None:
    def made_on_cuda() -> type | None:
        try:
            return type(torch.ones(1, device="cuda"))
        except (RuntimeError, AssertionError):  # a CPU-only build, as it should
            return None

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        with watch(simulate="cuda"):
            inside = pool.submit(made_on_cuda).result()
        after = pool.submit(made_on_cuda).result()
    assert inside is SimTensor
    assert after is not SimTensor


def test_a_simulated_gpu_beside_a_cuda_build_gets_the_plain_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(torch.version, "cuda", "13.0")  # as on a GPU machine
    assert DeviceLoader([], "cuda").background  # real CUDA streams: the CUDA stage
    with watch(simulate="cuda"):
        # The run report times the loader and counts copies at the user's lines only on the
        # plain path; the simulation's streams are stand-ins there is nothing to overlap on.
        assert not DeviceLoader([], "cuda").background
        assert DeviceLoader([], "cuda", background=True).background
