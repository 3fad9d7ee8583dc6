# source: https://github.com/pytorch/pytorch/issues/31232
# area: porting & distributed
# bug: the epoch loop never calls DistributedSampler.set_epoch, so under torchrun each GPU sees the same shuffled shard in the same order every epoch
import os
import socket
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


@dataclass
class ForecastConfig:
    window: int = 24
    horizon: int = 6
    n_series: int = 8
    hidden: int = 32
    batch_size: int = 32
    epochs: int = 3
    lr: float = 2e-3


class SlidingWindowDataset(Dataset):
    def __init__(self, cfg, length=400, seed=0):
        g = torch.Generator().manual_seed(seed)
        t = torch.arange(length, dtype=torch.float32).unsqueeze(1)
        phase = torch.rand(1, cfg.n_series, generator=g) * 6.28
        self.series = torch.sin(t / 12 + phase) + 0.1 * torch.randn(length, cfg.n_series, generator=g)
        self.window, self.horizon = cfg.window, cfg.horizon

    def __len__(self):
        return len(self.series) - self.window - self.horizon

    def __getitem__(self, i):
        x = self.series[i:i + self.window]
        y = self.series[i + self.window:i + self.window + self.horizon]
        return x, y


class LSTMForecaster(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.horizon, self.n_series = cfg.horizon, cfg.n_series
        self.lstm = nn.LSTM(cfg.n_series, cfg.hidden, batch_first=True)
        self.proj = nn.Linear(cfg.hidden, cfg.horizon * cfg.n_series)

    def forward(self, x):
        _, (h, _) = self.lstm(x)
        return self.proj(h[-1]).view(-1, self.horizon, self.n_series)


def build_loader(cfg):
    ds = SlidingWindowDataset(cfg)
    sampler = DistributedSampler(ds, shuffle=True, seed=0)
    return DataLoader(ds, batch_size=cfg.batch_size, sampler=sampler, drop_last=True), sampler


def train_one_epoch(model, loader, optimizer, device):
    model.train()
    total = torch.zeros((), device=device)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = F.mse_loss(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        total += loss.detach()
    return total / len(loader)


def main():
    if "RANK" not in os.environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            os.environ["MASTER_PORT"] = str(s.getsockname()[1])
        os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1")
    local_rank = int(os.environ["LOCAL_RANK"])
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    cfg = ForecastConfig()
    torch.manual_seed(0)
    loader, sampler = build_loader(cfg)
    model = DDP(LSTMForecaster(cfg).to(device), device_ids=[local_rank] if device.type == "cuda" else None)
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    for epoch in range(cfg.epochs):  # expect: any
        avg = train_one_epoch(model, loader, optimizer, device)
        if dist.get_rank() == 0:
            print(f"epoch {epoch} mse {avg.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
