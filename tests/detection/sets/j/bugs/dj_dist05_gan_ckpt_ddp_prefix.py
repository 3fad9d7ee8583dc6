# source: https://github.com/pfnet/pfrl/pull/55
# area: porting & distributed
# bug: the checkpoint stores the DDP wrapper's state_dict ("module."-prefixed keys), so the single-GPU export that loads it into a bare Generator fails after a multi-GPU run
import os
import tempfile

import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Generator(nn.Module):
    def __init__(self, z_dim=32, out_dim=64):
        super().__init__()
        self.z_dim = z_dim
        self.net = nn.Sequential(nn.Linear(z_dim, 128), nn.LeakyReLU(0.2), nn.Linear(128, out_dim), nn.Tanh())

    def forward(self, z):
        return self.net(z)


class Discriminator(nn.Module):
    def __init__(self, in_dim=64):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(in_dim, 128), nn.LeakyReLU(0.2), nn.Linear(128, 1))

    def forward(self, x):
        return self.net(x)


class GANTrainer:
    def __init__(self, device, local_rank, distributed):
        self.device = device
        self.gen = Generator().to(device)
        self.disc = Discriminator().to(device)
        if distributed:
            self.gen = DDP(self.gen, device_ids=[local_rank])
            self.disc = DDP(self.disc, device_ids=[local_rank])
        self.opt_g = torch.optim.Adam(self.gen.parameters(), lr=2e-4, betas=(0.5, 0.999))
        self.opt_d = torch.optim.Adam(self.disc.parameters(), lr=2e-4, betas=(0.5, 0.999))
        self.bce = nn.BCEWithLogitsLoss()

    def step(self, real):
        b = real.size(0)
        ones = torch.ones(b, 1, device=self.device)
        zeros = torch.zeros(b, 1, device=self.device)
        fake = self.gen(torch.randn(b, 32, device=self.device))
        d_loss = self.bce(self.disc(real), ones) + self.bce(self.disc(fake.detach()), zeros)
        self.opt_d.zero_grad(set_to_none=True)
        d_loss.backward()
        self.opt_d.step()
        g_loss = self.bce(self.disc(fake), ones)
        self.opt_g.zero_grad(set_to_none=True)
        g_loss.backward()
        self.opt_g.step()
        return d_loss.detach(), g_loss.detach()

    def save(self, path):
        torch.save({"generator": self.gen.state_dict(),  # expect: any
                    "opt_g": self.opt_g.state_dict()}, path)


def export_generator(ckpt_path, device):
    gen = Generator().to(device)
    gen.load_state_dict(torch.load(ckpt_path, map_location=device)["generator"])
    gen.eval()
    with torch.no_grad():
        return gen(torch.randn(8, 32, device=device))


def main():
    distributed = "RANK" in os.environ and dist.is_available()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if distributed:
        torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl")
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    trainer = GANTrainer(device, local_rank, distributed)
    for _ in range(30):
        real = torch.sin(torch.linspace(0, 6.28, 64, device=device) * torch.rand(16, 1, device=device) * 3)
        d_loss, g_loss = trainer.step(real)

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "gan.pt")
        if not distributed or dist.get_rank() == 0:
            trainer.save(path)
            samples = export_generator(path, device)
            print(f"d={d_loss.item():.3f} g={g_loss.item():.3f} samples {tuple(samples.shape)}")
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
