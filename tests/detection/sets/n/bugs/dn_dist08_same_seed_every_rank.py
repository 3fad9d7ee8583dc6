# source: https://github.com/huggingface/accelerate/issues/236
# area: porting & distributed
# bug: every DDP rank is seeded with the same cfg.seed, so the random crops/flips/noise drawn per sample are identical on all GPUs
import os
import random
from dataclasses import dataclass

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


@dataclass
class RunConfig:
    seed: int = 1234
    epochs: int = 2
    batch_size: int = 8
    crop: int = 24
    lr: float = 3e-3


def set_seed(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


class AugmentedPatches(Dataset):
    def __init__(self, n=96, size=32, crop=24):
        rng = np.random.default_rng(0)
        self.images = rng.standard_normal((n, 3, size, size)).astype(np.float32)
        self.labels = rng.integers(0, 4, size=n)
        self.crop = crop

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        img = self.images[i]
        top = np.random.randint(0, img.shape[1] - self.crop + 1)
        left = np.random.randint(0, img.shape[2] - self.crop + 1)
        img = img[:, top : top + self.crop, left : left + self.crop]
        if random.random() < 0.5:
            img = img[:, :, ::-1]
        img = torch.from_numpy(np.ascontiguousarray(img))
        img = img + 0.05 * torch.randn_like(img)
        return img, int(self.labels[i])


class SmallCNN(nn.Module):
    def __init__(self, num_classes=4):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        )
        self.fc = nn.Linear(64, num_classes)

    def forward(self, x):
        return self.fc(self.features(x).flatten(1))


def main(cfg: RunConfig):
    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if distributed:
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    rank = dist.get_rank() if distributed else 0
    set_seed(cfg.seed)  # expect: any
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank) if torch.cuda.is_available() else torch.device("cpu")

    model = SmallCNN().to(device)
    if distributed:
        model = DDP(model, device_ids=[local_rank] if device.type == "cuda" else None)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    dataset = AugmentedPatches(crop=cfg.crop)
    sampler = DistributedSampler(dataset, seed=cfg.seed) if distributed else None
    loader = DataLoader(dataset, batch_size=cfg.batch_size, shuffle=sampler is None, sampler=sampler, drop_last=True)

    for epoch in range(cfg.epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
        running = torch.zeros((), device=device)
        for images, labels in loader:
            images, labels = images.to(device), labels.to(device)
            loss = nn.functional.cross_entropy(model(images), labels)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            running += loss.detach()
        if rank == 0:
            print(f"epoch {epoch} loss {(running / len(loader)).item():.4f}")
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main(RunConfig())
