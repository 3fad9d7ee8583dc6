# source: https://github.com/marcoamonteiro/pi-GAN/issues/22
# area: porting & distributed
# bug: spawned workers never call torch.cuda.set_device(rank), so NCCL init and the DDP broadcast of every process put an extra context and buffers on GPU 0
import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

OPTIONS = {"latent_dim": 32, "img_size": 16, "batch_size": 8, "steps": 3, "lr_g": 2e-4, "lr_d": 4e-4, "seed": 0}


def find_free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def setup(rank, world_size, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    dist.init_process_group(backend, rank=rank, world_size=world_size)  # expect: any


def cleanup():
    dist.destroy_process_group()


class FiLMGenerator(nn.Module):
    def __init__(self, latent_dim, img_size, hidden=64):
        super().__init__()
        self.img_size = img_size
        self.mapping = nn.Sequential(nn.Linear(latent_dim, hidden), nn.LeakyReLU(0.2), nn.Linear(hidden, 2 * hidden))
        self.coord_fc = nn.Linear(2, hidden)
        self.to_rgb = nn.Linear(hidden, 3)

    def forward(self, z):
        gamma, beta = self.mapping(z).chunk(2, dim=-1)
        lin = torch.linspace(-1, 1, self.img_size, device=z.device)
        coords = torch.stack(torch.meshgrid(lin, lin, indexing="ij"), dim=-1).view(1, -1, 2)
        h = torch.sin(gamma[:, None] * self.coord_fc(coords) + beta[:, None])
        rgb = torch.tanh(self.to_rgb(h))
        return rgb.transpose(1, 2).reshape(z.shape[0], 3, self.img_size, self.img_size)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, 32, 4, 2, 1), nn.LeakyReLU(0.2),
            nn.Conv2d(32, 64, 4, 2, 1), nn.LeakyReLU(0.2),
            nn.Flatten(), nn.Linear(64 * 4 * 4, 1),
        )

    def forward(self, x):
        return self.net(x)


def train(rank, world_size, port, opt):
    setup(rank, world_size, port)
    device = torch.device("cuda", rank) if torch.cuda.is_available() else torch.device("cpu")
    torch.manual_seed(opt["seed"] + rank)

    generator = FiLMGenerator(opt["latent_dim"], opt["img_size"]).to(device)
    discriminator = Discriminator().to(device)
    ids = [rank] if device.type == "cuda" else None
    generator_ddp = DDP(generator, device_ids=ids)
    discriminator_ddp = DDP(discriminator, device_ids=ids)
    optim_g = torch.optim.Adam(generator_ddp.parameters(), lr=opt["lr_g"], betas=(0.0, 0.9))
    optim_d = torch.optim.Adam(discriminator_ddp.parameters(), lr=opt["lr_d"], betas=(0.0, 0.9))

    b, s = opt["batch_size"], opt["img_size"]
    d_hist, g_hist = [], []
    for _ in range(opt["steps"]):
        real = torch.rand(b, 3, s, s, device=device) * 2 - 1
        z = torch.randn(b, opt["latent_dim"], device=device)
        with torch.no_grad():
            fake = generator_ddp(z)
        logits = discriminator_ddp(torch.cat([real, fake], dim=0))
        d_loss = F.softplus(-logits[:b]).mean() + F.softplus(logits[b:]).mean()
        optim_d.zero_grad(set_to_none=True)
        d_loss.backward()
        optim_d.step()

        z = torch.randn(b, opt["latent_dim"], device=device)
        g_loss = F.softplus(-discriminator_ddp(generator_ddp(z))).mean()
        optim_g.zero_grad(set_to_none=True)
        g_loss.backward()
        optim_g.step()
        d_hist.append(d_loss.detach())
        g_hist.append(g_loss.detach())

    if rank == 0:
        print(f"D {torch.stack(d_hist).mean().item():.4f}  G {torch.stack(g_hist).mean().item():.4f}")
    cleanup()


if __name__ == "__main__":
    n_gpus = torch.cuda.device_count()
    port = find_free_port()
    if n_gpus > 1:
        mp.spawn(train, args=(n_gpus, port, OPTIONS), nprocs=n_gpus, join=True)
    else:
        train(0, 1, port, OPTIONS)
