# source: https://github.com/Lightning-AI/pytorch-lightning/issues/16166
# area: porting & distributed
# bug: every DDP rank is seeded with the same value, so all GPUs draw identical latent vectors each step and the generator effectively trains on one GPU's noise
import os
import random
from dataclasses import dataclass

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


@dataclass
class GANConfig:
    latent_dim: int = 16
    data_dim: int = 2
    batch_size: int = 64
    epochs: int = 3
    num_points: int = 1024
    lr: float = 2e-4
    seed: int = 1234


def seed_everything(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


def setup():
    distributed = "RANK" in os.environ and dist.is_available()
    if distributed:
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    rank = dist.get_rank() if distributed else 0
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    return distributed, rank, device


def ring_loader(cfg, distributed):
    g = torch.Generator().manual_seed(0)
    angles = torch.rand(cfg.num_points, generator=g) * 2 * torch.pi
    ring = torch.stack([angles.cos(), angles.sin()], dim=1)
    ds = TensorDataset(ring + 0.05 * torch.randn(ring.shape, generator=g))
    sampler = DistributedSampler(ds) if distributed else None
    loader = DataLoader(ds, batch_size=cfg.batch_size, sampler=sampler, shuffle=sampler is None,
                        drop_last=True, pin_memory=torch.cuda.is_available())
    return loader, sampler


class GANModule:
    def __init__(self, cfg, device, distributed):
        self.cfg, self.device = cfg, device
        gen = nn.Sequential(nn.Linear(cfg.latent_dim, 64), nn.ReLU(), nn.Linear(64, cfg.data_dim)).to(device)
        disc = nn.Sequential(nn.Linear(cfg.data_dim, 64), nn.LeakyReLU(0.2), nn.Linear(64, 1)).to(device)
        ids = [device] if device.type == "cuda" else None
        self.gen = DDP(gen, device_ids=ids) if distributed else gen
        self.disc = DDP(disc, device_ids=ids) if distributed else disc
        self.opt_g = torch.optim.Adam(self.gen.parameters(), lr=cfg.lr, betas=(0.5, 0.999))
        self.opt_d = torch.optim.Adam(self.disc.parameters(), lr=cfg.lr, betas=(0.5, 0.999))

    def sample_latent(self, n):
        return torch.randn(n, self.cfg.latent_dim, device=self.device)  # expect[s]: any

    def training_step(self, real):
        real = real.to(self.device, non_blocking=True)
        fake = self.gen(self.sample_latent(real.size(0)))
        ones = torch.ones(real.size(0), 1, device=self.device)
        zeros = torch.zeros_like(ones)
        d_loss = (F.binary_cross_entropy_with_logits(self.disc(real), ones)
                  + F.binary_cross_entropy_with_logits(self.disc(fake.detach()), zeros))
        self.opt_d.zero_grad(set_to_none=True)
        d_loss.backward()
        self.opt_d.step()
        g_loss = F.binary_cross_entropy_with_logits(self.disc(fake), ones)
        self.opt_g.zero_grad(set_to_none=True)
        g_loss.backward()
        self.opt_g.step()
        return d_loss.detach(), g_loss.detach()


def main():
    cfg = GANConfig()
    distributed, rank, device = setup()
    seed_everything(cfg.seed)  # expect[s]: any
    module = GANModule(cfg, device, distributed)
    loader, sampler = ring_loader(cfg, distributed)
    for epoch in range(cfg.epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
        d_sum = torch.zeros((), device=device)
        g_sum = torch.zeros((), device=device)
        for (real,) in loader:
            d_loss, g_loss = module.training_step(real)
            d_sum += d_loss
            g_sum += g_loss
        if rank == 0:
            n = len(loader)
            print(f"epoch {epoch}: D {(d_sum / n).item():.3f}  G {(g_sum / n).item():.3f}")
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
