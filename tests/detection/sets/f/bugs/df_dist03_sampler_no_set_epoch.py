# source: https://github.com/rosinality/stylegan2-pytorch/issues/319
# area: porting & distributed
# bug: the endless batch stream restarts the DistributedSampler loader without calling set_epoch, so every pass over the data on every GPU replays the same shuffled order
import os
import socket

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class SyntheticFaces(Dataset):
    def __init__(self, n=96, size=8):
        g = torch.Generator().manual_seed(0)
        self.images = torch.rand(n, 3, size, size, generator=g) * 2 - 1

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return self.images[i]


class BatchStream:
    """Iterates a loader forever; training is counted in iterations, not epochs."""

    def __init__(self, loader):
        self.loader = loader
        self.passes = 0
        self._it = iter(loader)

    def __next__(self):
        try:
            return next(self._it)
        except StopIteration:
            self.passes += 1
            self._it = iter(self.loader)  # expect[w]: any
            return next(self._it)


def make_nets(z_dim=16, size=8):
    gen = nn.Sequential(nn.Linear(z_dim, 128), nn.LeakyReLU(0.2), nn.Linear(128, 3 * size * size), nn.Tanh(),
                        nn.Unflatten(1, (3, size, size)))
    disc = nn.Sequential(nn.Flatten(), nn.Linear(3 * size * size, 128), nn.LeakyReLU(0.2), nn.Linear(128, 1))
    return gen, disc


def init_dist():
    if "RANK" not in os.environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            os.environ.update(MASTER_PORT=str(s.getsockname()[1]))
        os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1")
    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    local_rank = int(os.environ["LOCAL_RANK"])
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        return torch.device("cuda", local_rank), [local_rank]
    return torch.device("cpu"), None


def train(iters=30, batch=16, z_dim=16):
    device, ids = init_dist()
    dataset = SyntheticFaces()
    loader = DataLoader(dataset, batch_size=batch, drop_last=True,
                        sampler=DistributedSampler(dataset, shuffle=True))  # expect[w]: any
    stream = BatchStream(loader)
    gen, disc = make_nets(z_dim)
    gen, disc = DDP(gen.to(device), device_ids=ids), DDP(disc.to(device), device_ids=ids)
    g_opt = torch.optim.Adam(gen.parameters(), lr=2e-4, betas=(0.0, 0.99))
    d_opt = torch.optim.Adam(disc.parameters(), lr=2e-4, betas=(0.0, 0.99))
    softplus = nn.functional.softplus

    for it in range(iters):
        real = next(stream).to(device)
        z = torch.randn(real.size(0), z_dim, device=device)
        d_loss = softplus(disc(gen(z).detach())).mean() + softplus(-disc(real)).mean()
        d_opt.zero_grad()
        d_loss.backward()
        d_opt.step()

        z = torch.randn(real.size(0), z_dim, device=device)
        g_loss = softplus(-disc(gen(z))).mean()
        g_opt.zero_grad()
        g_loss.backward()
        g_opt.step()
        if it % 10 == 0 and dist.get_rank() == 0:
            losses = torch.stack([d_loss.detach(), g_loss.detach()]).tolist()
            print(f"iter {it} pass {stream.passes} d={losses[0]:.3f} g={losses[1]:.3f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    train()
