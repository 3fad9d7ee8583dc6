# source: https://github.com/Lightning-AI/pytorch-lightning/pull/5855
# area: porting & distributed
# bug: the launcher moves both GAN networks to the GPU in the parent before mp.spawn, so the parent holds a CUDA context and a full copy of the weights on GPU 0 and every worker receives CUDA-IPC tensors living on GPU 0
import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

LATENT = 16
DATA_DIM = 2


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(LATENT, 64), nn.ReLU(), nn.Linear(64, DATA_DIM))

    def forward(self, z):
        return self.net(z)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(DATA_DIM, 64), nn.LeakyReLU(0.2), nn.Linear(64, 1))

    def forward(self, x):
        return self.net(x).squeeze(-1)


def ring_samples(n, gen, device):
    angle = torch.rand(n, generator=gen, device=device) * 6.2832
    return torch.stack([angle.cos(), angle.sin()], dim=1) * 2.0


def summarize(name, module, example):
    with torch.no_grad():
        out = module(example)
    n_params = sum(p.numel() for p in module.parameters())
    print(f"{name}: {n_params} params, output {tuple(out.shape)}")


def worker(rank, generator, discriminator, world_size, port, steps):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    if torch.cuda.is_available():
        torch.cuda.set_device(rank)
        device = torch.device("cuda", rank)
    else:
        device = torch.device("cpu")
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo", rank=rank, world_size=world_size)
    g = DDP(generator.to(device))
    d = DDP(discriminator.to(device))
    opt_g = torch.optim.Adam(g.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(d.parameters(), lr=2e-4, betas=(0.5, 0.999))
    rng = torch.Generator(device=device).manual_seed(rank)
    for step in range(steps):
        real = ring_samples(64, rng, device)
        fake = g(torch.randn(64, LATENT, generator=rng, device=device))
        d_loss = (F.softplus(-d(real)) + F.softplus(d(fake.detach()))).mean()
        opt_d.zero_grad(set_to_none=True)
        d_loss.backward()
        opt_d.step()
        g_loss = F.softplus(-d(fake)).mean()
        opt_g.zero_grad(set_to_none=True)
        g_loss.backward()
        opt_g.step()
    if rank == 0:
        print(f"finished {steps} steps, d_loss {d_loss.item():.3f} g_loss {g_loss.item():.3f}")
    dist.destroy_process_group()


def launch(steps=20):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    world_size = max(torch.cuda.device_count(), 1)
    generator = Generator().to(device)  # expect[s]: any
    discriminator = Discriminator().to(device)  # expect[s]: any
    summarize("generator", generator, torch.zeros(2, LATENT, device=device))
    summarize("discriminator", discriminator, torch.zeros(2, DATA_DIM, device=device))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(worker, args=(generator, discriminator, world_size, port, steps), nprocs=world_size, join=True)


if __name__ == "__main__":
    launch()
