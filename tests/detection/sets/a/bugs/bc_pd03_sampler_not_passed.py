# source: https://github.com/PatrickHua/SimSiam/issues/16
# area: porting & distributed
# bug: a DistributedSampler is built (and even set_epoch'ed) but the DataLoader is given shuffle=True instead of sampler=, so every rank trains on the whole dataset
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
    local_rank = int(os.environ["LOCAL_RANK"])
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        return torch.device("cuda", local_rank)
    return torch.device("cpu")


class Projector(nn.Module):
    def __init__(self, d=16, h=32):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(d, h), nn.BatchNorm1d(h), nn.ReLU())
        self.proj = nn.Linear(h, h)

    def forward(self, x):
        return self.proj(self.backbone(x))


def negative_cosine(p, z):
    return -nn.functional.cosine_similarity(p, z.detach(), dim=-1).mean()


def build_loaders(dataset, batch_size):
    train_sampler = DistributedSampler(dataset, shuffle=True)
    train_loader = DataLoader(dataset, batch_size=batch_size, shuffle=True, drop_last=True)  # expect: any
    return train_loader, train_sampler


def main():
    torch.manual_seed(0)
    device = init_distributed()
    data = TensorDataset(torch.randn(128, 16))
    loader, sampler = build_loaders(data, batch_size=16)
    model = Projector().to(device)
    model = DDP(model, device_ids=[device.index] if device.type == "cuda" else None)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for (x,) in loader:
            x = x.to(device)
            v1, v2 = x + 0.1 * torch.randn_like(x), x + 0.1 * torch.randn_like(x)
            z1, z2 = model(v1), model(v2)
            loss = 0.5 * (negative_cosine(z1, z2) + negative_cosine(z2, z1))
            opt.zero_grad()
            loss.backward()
            opt.step()
        if dist.get_rank() == 0:
            print(f"epoch {epoch}: {len(loader)} steps, loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
