# source: https://github.com/Spijkervet/SimCLR/pull/26
# area: porting & distributed
# bug: DistributedSampler.set_epoch is never called, so every GPU replays the identical shuffled order (and identical shard) in every epoch
import os
import socket

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class TwoViewDataset(Dataset):
    def __init__(self, n=256, size=16):
        g = torch.Generator().manual_seed(0)
        self.images = torch.rand(n, 3, size, size, generator=g)

    def __len__(self):
        return len(self.images)

    def augment(self, x):
        shift = torch.randint(-2, 3, (2,))
        x = torch.roll(x, shifts=(int(shift[0]), int(shift[1])), dims=(1, 2))
        if torch.rand(()) < 0.5:
            x = x.flip(2)
        return (x + 0.05 * torch.randn_like(x)).clamp(0, 1)

    def __getitem__(self, idx):
        img = self.images[idx]
        return self.augment(img), self.augment(img)


class SimCLR(nn.Module):
    def __init__(self, feat_dim=64, proj_dim=32):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, feat_dim, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        )
        self.projector = nn.Sequential(nn.Linear(feat_dim, feat_dim), nn.ReLU(), nn.Linear(feat_dim, proj_dim))

    def forward(self, x_i, x_j):
        return self.projector(self.encoder(x_i)), self.projector(self.encoder(x_j))


def nt_xent(z_i, z_j, temperature=0.5):
    z = F.normalize(torch.cat([z_i, z_j], dim=0), dim=1)
    n = z_i.shape[0]
    sim = z @ z.t() / temperature
    sim.fill_diagonal_(float("-inf"))
    targets = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)]).to(z.device)
    return F.cross_entropy(sim, targets)


def train(loader, model, optimizer, device):
    total = torch.zeros((), device=device)
    for x_i, x_j in loader:
        x_i = x_i.to(device, non_blocking=True)
        x_j = x_j.to(device, non_blocking=True)
        z_i, z_j = model(x_i, x_j)
        loss = nt_xent(z_i, z_j)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        total += loss.detach()
    return total / max(len(loader), 1)


def main(epochs=3, start_epoch=0):
    if "RANK" not in os.environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0",
                              MASTER_ADDR="127.0.0.1", MASTER_PORT=str(s.getsockname()[1]))
    local_rank = int(os.environ["LOCAL_RANK"])
    use_cuda = torch.cuda.is_available()
    if use_cuda:
        torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank) if use_cuda else torch.device("cpu")
    dist.init_process_group("nccl" if use_cuda else "gloo")
    rank, world_size = dist.get_rank(), dist.get_world_size()

    dataset = TwoViewDataset()
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True)  # expect[a]: any
    loader = DataLoader(dataset, batch_size=32, sampler=sampler, drop_last=True, pin_memory=use_cuda)

    model = DDP(SimCLR().to(device), device_ids=[local_rank] if use_cuda else None)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-4)
    for epoch in range(start_epoch, epochs):  # expect[a]: any
        loss_epoch = train(loader, model, optimizer, device)
        if rank == 0:
            print(f"Epoch [{epoch}/{epochs}]\t Loss: {loss_epoch.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
