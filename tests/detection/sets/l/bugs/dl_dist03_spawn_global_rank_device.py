# source: https://github.com/ultralytics/ultralytics/issues/20915
# area: porting & distributed
# bug: spawned worker picks its GPU with the global rank, which is past the local GPU count on every node but the first
import argparse
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--nnodes", type=int, default=int(os.environ.get("NNODES", 1)))
    p.add_argument("--node-rank", type=int, default=int(os.environ.get("NODE_RANK", 0)))
    p.add_argument("--master-addr", default=os.environ.get("MASTER_ADDR", "127.0.0.1"))
    p.add_argument("--master-port", default=os.environ.get("MASTER_PORT", "29613"))
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=32)
    return p.parse_args([])


class HousingRegressor(nn.Module):
    def __init__(self, n_features=12):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_features, 64), nn.SiLU(),
                                 nn.Linear(64, 64), nn.SiLU(), nn.Linear(64, 1))

    def forward(self, x):
        return self.net(x).squeeze(-1)


def make_dataset(n=512, n_features=12):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, n_features, generator=g)
    w = torch.linspace(-1, 1, n_features)
    return TensorDataset(x, x @ w + 0.1 * torch.randn(n, generator=g))


def worker(local_idx, nprocs, args):
    rank = args.node_rank * nprocs + local_idx
    world_size = args.nnodes * nprocs
    os.environ["MASTER_ADDR"] = args.master_addr
    os.environ["MASTER_PORT"] = str(args.master_port)
    if torch.cuda.is_available():
        torch.cuda.set_device(rank)  # expect[w]: any
        device = torch.device("cuda", rank)  # expect[w]: any
        backend = "nccl"
    else:
        device, backend = torch.device("cpu"), "gloo"
    dist.init_process_group(backend, rank=rank, world_size=world_size)

    dataset = make_dataset()
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler, drop_last=True)
    model = HousingRegressor().to(device)
    ddp = nn.parallel.DistributedDataParallel(
        model, device_ids=[device.index] if device.type == "cuda" else None)
    opt = torch.optim.AdamW(ddp.parameters(), lr=1e-3)

    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        total = torch.zeros((), device=device)
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            loss = nn.functional.mse_loss(ddp(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += loss.detach()
        dist.all_reduce(total)
        if rank == 0:
            print(f"epoch {epoch} mse {(total / (world_size * len(loader))).item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    cli = parse_args()
    gpus_per_node = max(1, torch.cuda.device_count())
    if gpus_per_node == 1 and cli.nnodes == 1:
        worker(0, 1, cli)
    else:
        mp.spawn(worker, args=(gpus_per_node, cli), nprocs=gpus_per_node, join=True)
