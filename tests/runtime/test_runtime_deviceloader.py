"""DeviceLoader batches under a simulated GPU: placed on the device, no finding."""

from __future__ import annotations

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
