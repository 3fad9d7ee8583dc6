# source: https://github.com/open-edge-platform/geti/pull/5958
# area: transfer & sync
# bug: the data module defaults to loading and augmenting every sample in the main process (no workers), so on a GPU the training step waits on CPU-side augmentation and the device sits idle
import numpy as np
import torch
import torch.nn as nn
from dataclasses import dataclass
from torch.utils.data import DataLoader, Dataset


@dataclass
class DataModuleConfig:
    image_size: int = 64
    num_samples: int = 64
    batch_size: int = 16
    num_workers: int = 0  # expect: any
    pin_memory: bool = True


class AugmentedClassificationDataset(Dataset):
    """Synthetic images that go through a numpy augmentation pipeline per sample."""

    def __init__(self, cfg, n_classes=5, seed=0):
        rng = np.random.default_rng(seed)
        self.images = rng.integers(0, 255, (cfg.num_samples, cfg.image_size + 8, cfg.image_size + 8, 3), dtype=np.uint8)
        self.labels = rng.integers(0, n_classes, cfg.num_samples)
        self.size = cfg.image_size
        self.mean = np.array([0.485, 0.456, 0.406], dtype=np.float32)
        self.std = np.array([0.229, 0.224, 0.225], dtype=np.float32)

    def __len__(self):
        return len(self.labels)

    def _augment(self, img, rng):
        y, x = rng.integers(0, 8, 2)
        img = img[y:y + self.size, x:x + self.size].astype(np.float32) / 255.0
        if rng.random() < 0.5:
            img = img[:, ::-1]
        jitter = 1.0 + rng.uniform(-0.2, 0.2, size=3).astype(np.float32)
        img = np.clip(img * jitter, 0.0, 1.0)
        img = (img - self.mean) / self.std
        return np.ascontiguousarray(img.transpose(2, 0, 1))

    def __getitem__(self, idx):
        rng = np.random.default_rng()
        img = self._augment(self.images[idx], rng)
        return torch.from_numpy(img), int(self.labels[idx])


class ClassificationDataModule:
    def __init__(self, cfg):
        self.cfg = cfg
        self.train_set = AugmentedClassificationDataset(cfg)

    def train_dataloader(self):
        workers = self.cfg.num_workers
        return DataLoader(
            self.train_set,
            batch_size=self.cfg.batch_size,
            shuffle=True,
            num_workers=workers,
            pin_memory=self.cfg.pin_memory and torch.cuda.is_available(),
            persistent_workers=workers > 0,
            drop_last=True,
        )


def build_model(n_classes=5):
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
        nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, n_classes),
    )


def fit(epochs=2):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dm = ClassificationDataModule(DataModuleConfig())
    model = build_model().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    crit = nn.CrossEntropyLoss()
    for epoch in range(epochs):
        total = torch.zeros((), device=device)
        for images, labels in dm.train_dataloader():
            images = images.to(device, non_blocking=True)
            labels = labels.to(device, non_blocking=True)
            loss = crit(model(images), labels)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += loss.detach()
        print(f"epoch {epoch}: loss sum {total.item():.3f}")


if __name__ == "__main__":
    fit()
