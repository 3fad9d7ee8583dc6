# source: https://github.com/LibreYOLO/libreyolo/pull/594
# area: porting & distributed
# bug: only rank 0 validates, but it forwards through the live DDP wrapper, whose buffer broadcast waits for ranks parked at the barrier: multi-GPU training hangs
import os
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


@dataclass
class TrainConfig:
    epochs: int = 2
    batch: int = 16
    lr: float = 0.01
    num_classes: int = 3
    image_size: int = 16


def tiny_detector_backbone(num_classes):
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.SiLU(),
        nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.SiLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, num_classes),
    )


def synthetic_split(n, cfg, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 3, cfg.image_size, cfg.image_size, generator=g)
    y = torch.randint(0, cfg.num_classes, (n,), generator=g)
    x[:, 0] += y.view(-1, 1, 1).float()
    return TensorDataset(x, y)


class Trainer:
    def __init__(self, cfg):
        self.cfg = cfg
        self.world_size = int(os.environ.get("WORLD_SIZE", "1"))
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        self.is_distributed = self.world_size > 1
        if self.is_distributed and not dist.is_initialized():
            dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
        self.is_main = not self.is_distributed or dist.get_rank() == 0
        self.device = self._setup_device()
        model = tiny_detector_backbone(cfg.num_classes).to(self.device)
        if self.is_distributed:
            ids = [self.local_rank] if self.device.type == "cuda" else None
            model = DDP(model, device_ids=ids)
        self.model = model
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=cfg.lr, momentum=0.9)
        train_ds = synthetic_split(128, cfg, seed=0)
        self.sampler = DistributedSampler(train_ds) if self.is_distributed else None
        self.train_loader = DataLoader(train_ds, cfg.batch, shuffle=self.sampler is None, sampler=self.sampler)
        self.val_loader = DataLoader(synthetic_split(48, cfg, seed=1), cfg.batch)

    def _setup_device(self):
        if torch.cuda.is_available():
            torch.cuda.set_device(self.local_rank)
            return torch.device("cuda", self.local_rank)
        return torch.device("cpu")

    def _train_epoch(self, epoch):
        if self.sampler is not None:
            self.sampler.set_epoch(epoch)
        self.model.train()
        for images, labels in self.train_loader:
            images, labels = images.to(self.device), labels.to(self.device)
            loss = nn.functional.cross_entropy(self.model(images), labels)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()

    @torch.no_grad()
    def _run_validation(self, epoch):
        self.model.eval()
        correct = torch.zeros((), dtype=torch.long, device=self.device)
        for images, labels in self.val_loader:
            logits = self.model(images.to(self.device))  # expect: any
            correct += (logits.argmax(1) == labels.to(self.device)).sum()
        acc = correct.item() / len(self.val_loader.dataset)
        print(f"epoch {epoch + 1}: val acc {acc:.3f}")
        return acc

    def _validate_epoch(self, epoch):
        if self.is_distributed and not self.is_main:
            dist.barrier()
            return None
        try:
            return self._run_validation(epoch)
        finally:
            if self.is_distributed:
                dist.barrier()

    def fit(self):
        for epoch in range(self.cfg.epochs):
            self._train_epoch(epoch)
            self._validate_epoch(epoch)
        if self.is_distributed:
            dist.destroy_process_group()


if __name__ == "__main__":
    Trainer(TrainConfig()).fit()
