"""DeviceLoader batches under a simulated GPU: placed on the device, no finding."""

from __future__ import annotations

import time
from pathlib import Path

import torch
from torch.utils.data import DataLoader, TensorDataset

import torchport


def test_deviceloader_batches_reach_the_simulated_gpu_without_findings() -> None:
    data = TensorDataset(torch.randn(32, 4, dtype=torch.float64), torch.arange(32))
    with torchport.watch(simulate="cuda") as w:
        model = torch.nn.Linear(4, 2).to("cuda")
        seen = []
        for x, y in torchport.DeviceLoader(DataLoader(data, batch_size=8), dtype=torch.float32):
            assert x.device.type == "cuda" and y.device.type == "cuda"
            assert x.dtype == torch.float32 and y.dtype == torch.int64
            model(x).sum().backward()
            seen.append(y.cpu())
    assert torch.equal(torch.cat(seen), torch.arange(32))
    assert [f.code for f in w.findings if f.code.startswith(("TP1", "TP3"))] == []


def test_cuda_without_an_index_follows_the_current_device_when_a_pass_starts() -> None:
    # As x.to("cuda") does: a DDP script may build its loader before set_device(local_rank).
    with torchport.watch(simulate="cuda:2"):
        loader = torchport.DeviceLoader([torch.ones(2)], "cuda")
        [first] = list(loader)
        torch.cuda.set_device(1)
        [second] = list(loader)
    assert first.device == torch.device("cuda", 0)
    assert second.device == torch.device("cuda", 1)


class _SlowSamples(torch.utils.data.Dataset[torch.Tensor]):
    # 28 batches of 8 at 5 ms a sample: past TP250's evidence bar (24 timed batches, 1 s).
    def __len__(self) -> int:
        return 28 * 8

    def __getitem__(self, i: int) -> torch.Tensor:
        time.sleep(0.005)
        return torch.full((4,), float(i))


def test_a_prefetching_deviceloader_is_timed_where_the_loop_takes_its_batches() -> None:
    with torchport.watch(simulate="cuda") as w:
        loader = DataLoader(_SlowSamples(), batch_size=8)
        for batch in torchport.DeviceLoader(loader, "cuda", background=True):
            batch.sum().item()  # a sync on every step
    [loader_stats] = w.report().facts["loaders"]
    assert loader_stats["loader"] == "DeviceLoader"
    assert loader_stats["site"].endswith(f":{_line_of('for batch in torchport.DeviceLoader')}")
    assert loader_stats["batches"] == 27 and loader_stats["num_workers"] == 0
    starved = next(f for f in w.findings if f.code == "TP250")
    assert "for this DeviceLoader" in starved.message
    assert starved.fix is not None and "on the DataLoader it wraps" in starved.fix.title
    assert "pin_memory" not in starved.fix.title and "wrap the loader" not in starved.fix.title
    assert any(f.code == "TP204" for f in w.findings)  # steps are counted: .item() is in the loop


def _line_of(text: str) -> int:
    lines = Path(__file__).read_text(encoding="utf-8").splitlines()
    return next(
        n for n, line in enumerate(lines, start=1) if text in line and "_line_of" not in line
    )
