# source: https://github.com/meta-pytorch/tritonbench/pull/869
# area: porting & distributed
# bug: get_device() hard-codes cuda:0, so under torchrun every rank puts its replica on GPU 0 instead of cuda:LOCAL_RANK
import os
import socket

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def init_distributed():
    if "RANK" not in os.environ:  # plain `python train.py`: a world of one
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(_free_port()))
        os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0")
    dist.init_process_group(backend="nccl" if torch.cuda.is_available() else "gloo")
    return int(os.environ["LOCAL_RANK"])


def get_device():
    return torch.device("cuda:0" if torch.cuda.is_available() else "cpu")  # expect: any


class Regressor(nn.Module):
    def __init__(self, d=8):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(d, 32), nn.SiLU(), nn.Linear(32, 1))

    def forward(self, x):
        return self.body(x).squeeze(-1)


def main():
    torch.manual_seed(0)
    local_rank = init_distributed()
    device = get_device()
    if device.type == "cuda":
        torch.cuda.set_device(device)
    x = torch.randn(256, 8)
    y = x @ torch.linspace(-1, 1, 8)
    ds = TensorDataset(x, y)
    sampler = DistributedSampler(ds)
    loader = DataLoader(ds, batch_size=32, sampler=sampler)
    model = DDP(Regressor().to(device), device_ids=[device.index] if device.type == "cuda" else None)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for xb, yb in loader:
            xb, yb = xb.to(device), yb.to(device)
            loss = nn.functional.mse_loss(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
        if local_rank == 0:
            print(f"epoch {epoch}: loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
