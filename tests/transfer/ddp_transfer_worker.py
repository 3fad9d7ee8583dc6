"""Run under torchrun by test_transfer_ddp.py: DistributedSampler + DeviceLoader on gloo.

Each rank uses its own GPU (cuda:LOCAL_RANK) when the launcher left it one, else the CPU.
"""

from __future__ import annotations

import json
import os
import sys

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

from torchport.transfer import DeviceLoader


def _device() -> torch.device:
    if not torch.cuda.is_available():
        return torch.device("cpu")
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    return torch.device("cuda")  # DeviceLoader follows the current device, as .to("cuda") does


def main(out_dir: str, size: int) -> None:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    dataset = TensorDataset(torch.arange(size))
    sampler = DistributedSampler(dataset, shuffle=True, seed=7)
    loader = DeviceLoader(
        DataLoader(dataset, batch_size=4, sampler=sampler), _device(), background=True
    )
    epochs, devices = {}, set()
    for epoch in range(2):
        loader.set_epoch(epoch)
        epochs[epoch] = []
        for (batch,) in loader:
            devices.add(str(batch.device))
            epochs[epoch] += batch.tolist()
    # Every rank must finish its epochs before anyone tears the group down.
    dist.barrier()
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
        json.dump({"world": dist.get_world_size(), "epochs": epochs, "devices": sorted(devices)}, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
