# source: https://github.com/pytorch/examples/issues/387
# area: transfer & sync
# bug: the data config defaults to num_workers=0, so decoding and augmentation run in the training process and the GPU sits idle waiting for every batch
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


@dataclass
class DataConfig:
    num_images: int = 96
    raw_size: int = 96
    crop_size: int = 64
    batch_size: int = 32
    num_workers: int = 0  # expect[w]: any
    pin_memory: bool = True


class SyntheticImageFolder(Dataset):
    """Stands in for an ImageFolder: 'decodes' a raw image and applies train-time augmentation."""

    def __init__(self, cfg, num_classes=10):
        self.cfg = cfg
        self.num_classes = num_classes

    def __len__(self):
        return self.cfg.num_images

    def _decode(self, idx):
        rng = np.random.default_rng(idx)
        raw = rng.integers(0, 256, size=(self.cfg.raw_size, self.cfg.raw_size, 3), dtype=np.uint8)
        return raw.astype(np.float32) / 255.0

    def _augment(self, img, rng):
        c = self.cfg.crop_size
        top, left = rng.integers(0, img.shape[0] - c + 1, size=2)
        img = img[top:top + c, left:left + c]
        if rng.random() < 0.5:
            img = img[:, ::-1]
        img = np.clip(img * rng.uniform(0.8, 1.2) + rng.uniform(-0.1, 0.1), 0.0, 1.0)
        mean = np.array([0.485, 0.456, 0.406], dtype=np.float32)
        std = np.array([0.229, 0.224, 0.225], dtype=np.float32)
        return np.ascontiguousarray(((img - mean) / std).transpose(2, 0, 1))

    def __getitem__(self, idx):
        rng = np.random.default_rng(idx + 12345)
        img = self._augment(self._decode(idx), rng)
        return torch.from_numpy(img), idx % self.num_classes


def build_loader(cfg):
    use_pin = cfg.pin_memory and torch.cuda.is_available()
    return DataLoader(SyntheticImageFolder(cfg), batch_size=cfg.batch_size, shuffle=True,
                      num_workers=cfg.num_workers, pin_memory=use_pin,  # expect[w]: any
                      persistent_workers=cfg.num_workers > 0)


def make_model(num_classes=10):
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(inplace=True),
        nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, num_classes),
    )


def train(cfg, epochs=2):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = make_model().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    loader = build_loader(cfg)
    for epoch in range(epochs):
        total = torch.zeros((), device=device)
        for images, targets in loader:
            images = images.to(device, non_blocking=True)
            targets = targets.to(device, non_blocking=True)
            loss = loss_fn(model(images), targets)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += loss.detach()
        print(f"epoch {epoch}: loss {(total / len(loader)).item():.4f}")


if __name__ == "__main__":
    torch.manual_seed(0)
    train(DataConfig())
