# twin of: bugs/dp_dist03_accum_no_sync.py
# area: porting & distributed
# correct: micro-batches that do not end an accumulation window run under model.no_sync(), so DDP all-reduces only once per optimizer step
import contextlib
import os
from types import SimpleNamespace

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class SyntheticBoxes(Dataset):
    """Images with one bright square; target is the square centre (normalised)."""

    def __init__(self, n=256, size=32):
        g = torch.Generator().manual_seed(1)
        self.centres = torch.rand(n, 2, generator=g) * 0.6 + 0.2
        self.size = size

    def __len__(self):
        return len(self.centres)

    def __getitem__(self, i):
        img = torch.zeros(3, self.size, self.size)
        cx, cy = (self.centres[i] * self.size).long().tolist()
        img[:, max(cy - 3, 0):cy + 3, max(cx - 3, 0):cx + 3] = 1.0
        return img, self.centres[i]


class CentreNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.SiLU(),
            nn.Conv2d(16, 32, 3, 2, 1), nn.BatchNorm2d(32), nn.SiLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.head = nn.Linear(32, 2)

    def forward(self, x):
        return self.head(self.backbone(x)).sigmoid()


def setup(opt):
    opt.local_rank = int(os.environ.get("LOCAL_RANK", -1))
    if opt.local_rank != -1 and dist.is_available():
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    if torch.cuda.is_available():
        torch.cuda.set_device(max(opt.local_rank, 0))
        return torch.device("cuda", max(opt.local_rank, 0))
    return torch.device("cpu")


def train(opt, device):
    ds = SyntheticBoxes()
    sampler = DistributedSampler(ds) if opt.local_rank != -1 else None
    loader = DataLoader(ds, batch_size=opt.batch_size, shuffle=sampler is None, sampler=sampler,
                        pin_memory=torch.cuda.is_available(), drop_last=True)
    model = CentreNet().to(device)
    if opt.local_rank != -1:
        model = DDP(model, device_ids=[device] if device.type == "cuda" else None)
    accumulate = max(round(opt.nominal_batch / opt.batch_size), 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=opt.lr, momentum=0.9)
    optimizer.zero_grad(set_to_none=True)
    for epoch in range(opt.epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
        model.train()
        mloss = torch.zeros((), device=device)
        for i, (imgs, centres) in enumerate(loader):
            imgs = imgs.to(device, non_blocking=True)
            centres = centres.to(device, non_blocking=True)
            step_now = (i + 1) % accumulate == 0
            sync_ctx = model.no_sync() if isinstance(model, DDP) and not step_now else contextlib.nullcontext()
            with sync_ctx:
                loss = F.smooth_l1_loss(model(imgs), centres)
                (loss / accumulate).backward()
            if step_now:
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
            mloss += loss.detach()
        if opt.local_rank in (-1, 0):
            print(f"epoch {epoch} accumulate={accumulate} loss={(mloss / len(loader)).item():.4f}")


if __name__ == "__main__":
    opt = SimpleNamespace(batch_size=16, nominal_batch=64, lr=0.05, epochs=2)
    device = setup(opt)
    train(opt, device)
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
