"""Run under torchrun by test_transfer_ddp.py: DistributedSampler + DeviceLoader on gloo."""

from __future__ import annotations

import json
import os
import sys

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

from torchport.transfer import DeviceLoader


def main(out_dir: str, size: int) -> None:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    dataset = TensorDataset(torch.arange(size))
    sampler = DistributedSampler(dataset, shuffle=True, seed=7)
    loader = DeviceLoader(
        DataLoader(dataset, batch_size=4, sampler=sampler), "cpu", background=True
    )
    epochs = {}
    for epoch in range(2):
        loader.set_epoch(epoch)
        epochs[epoch] = [int(x) for (batch,) in loader for x in batch]
    # Every rank must finish its epochs before anyone tears the group down.
    dist.barrier()
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
        json.dump({"world": dist.get_world_size(), "epochs": epochs}, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
