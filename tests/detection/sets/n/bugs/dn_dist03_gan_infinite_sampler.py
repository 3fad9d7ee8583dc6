# source: https://github.com/rosinality/stylegan2-pytorch/issues/199
# area: porting & distributed
# bug: the infinite sample_data loop restarts a DistributedSampler loader without set_epoch, so every pass replays the same order on every GPU
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils import data


class ToyImages(data.Dataset):
    def __init__(self, n=96, size=16):
        g = torch.Generator().manual_seed(1)
        self.images = torch.tanh(torch.randn(n, 1, size, size, generator=g))

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return self.images[i]


class Generator(nn.Module):
    def __init__(self, latent=32, size=16):
        super().__init__()
        self.size = size
        self.net = nn.Sequential(nn.Linear(latent, 128), nn.LeakyReLU(0.2), nn.Linear(128, size * size), nn.Tanh())

    def forward(self, z):
        return self.net(z).view(-1, 1, self.size, self.size)


class Discriminator(nn.Module):
    def __init__(self, size=16):
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(size * size, 128), nn.LeakyReLU(0.2), nn.Linear(128, 1))

    def forward(self, x):
        return self.net(x)


def data_sampler(dataset, shuffle, distributed):
    if distributed:
        return data.distributed.DistributedSampler(dataset, shuffle=shuffle)  # expect[w]: any
    if shuffle:
        return data.RandomSampler(dataset)
    return data.SequentialSampler(dataset)


def sample_data(loader):
    while True:
        for batch in loader:  # expect[w]: any
            yield batch


def train(args, loader, generator, discriminator, g_optim, d_optim, device):
    loader = sample_data(loader)
    d_total = torch.zeros((), device=device)
    g_total = torch.zeros((), device=device)
    for _ in range(args.iter):
        real = next(loader).to(device)
        z = torch.randn(real.shape[0], args.latent, device=device)

        fake = generator(z)
        d_loss = F.softplus(discriminator(fake.detach())).mean() + F.softplus(-discriminator(real)).mean()
        d_optim.zero_grad(set_to_none=True)
        d_loss.backward()
        d_optim.step()

        g_loss = F.softplus(-discriminator(generator(z))).mean()
        g_optim.zero_grad(set_to_none=True)
        g_loss.backward()
        g_optim.step()

        d_total += d_loss.detach()
        g_total += g_loss.detach()
    return d_total / args.iter, g_total / args.iter


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iter", type=int, default=30)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--latent", type=int, default=32)
    args = parser.parse_args()

    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if distributed:
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank) if torch.cuda.is_available() else torch.device("cpu")

    generator = Generator(args.latent).to(device)
    discriminator = Discriminator().to(device)
    g_optim = torch.optim.Adam(generator.parameters(), lr=2e-4, betas=(0.0, 0.99))
    d_optim = torch.optim.Adam(discriminator.parameters(), lr=2e-4, betas=(0.0, 0.99))
    if distributed:
        ids = [local_rank] if device.type == "cuda" else None
        generator = DDP(generator, device_ids=ids)
        discriminator = DDP(discriminator, device_ids=ids)

    dataset = ToyImages()
    sampler = data_sampler(dataset, shuffle=True, distributed=distributed)
    loader = data.DataLoader(dataset, batch_size=args.batch, sampler=sampler, drop_last=True)
    d_loss, g_loss = train(args, loader, generator, discriminator, g_optim, d_optim, device)
    if not distributed or dist.get_rank() == 0:
        print(f"d_loss {d_loss.item():.3f} g_loss {g_loss.item():.3f}")
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
