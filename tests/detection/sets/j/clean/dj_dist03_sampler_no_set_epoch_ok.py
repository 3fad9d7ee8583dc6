# twin of: bugs/dj_dist03_sampler_no_set_epoch.py
# area: porting & distributed
# correct: sampler.set_epoch(epoch) is called before each epoch, so the shuffled shard differs per epoch and stays consistent across ranks
import os
import tempfile

import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


def init_distributed(tmpdir):
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    if "RANK" in os.environ:
        local_rank = int(os.environ["LOCAL_RANK"])
        if backend == "nccl":
            torch.cuda.set_device(local_rank)
        dist.init_process_group(backend)
    else:
        local_rank = 0
        dist.init_process_group(backend, init_method=f"file://{tmpdir}/pg", rank=0, world_size=1)
    device = torch.device("cuda", local_rank) if backend == "nccl" else torch.device("cpu")
    return local_rank, device


class SyntheticDigits(Dataset):
    def __init__(self, n=512, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, 1, 16, 16, generator=g)
        self.y = torch.randint(0, 10, (n,), generator=g)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


class SmallConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        )
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        return self.fc(self.features(x).flatten(1))


def train_one_epoch(model, loader, opt, device):
    model.train()
    crit = nn.CrossEntropyLoss()
    total = torch.zeros((), device=device)
    for x, y in loader:
        x = x.to(device, non_blocking=True)
        y = y.to(device, non_blocking=True)
        loss = crit(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        total += loss.detach()
    return total / len(loader)


def main(epochs=3):
    with tempfile.TemporaryDirectory() as tmp:
        local_rank, device = init_distributed(tmp)
        ds = SyntheticDigits()
        sampler = DistributedSampler(ds, shuffle=True, seed=17)
        loader = DataLoader(ds, batch_size=64, sampler=sampler, num_workers=0,
                            pin_memory=device.type == "cuda", drop_last=True)
        model = SmallConvNet().to(device)
        model = DDP(model, device_ids=[local_rank] if device.type == "cuda" else None)
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

        for epoch in range(epochs):
            sampler.set_epoch(epoch)
            avg = train_one_epoch(model, loader, opt, device)
            if dist.get_rank() == 0:
                print(f"epoch {epoch}: loss {avg.item():.4f}")
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
