# source: https://github.com/ultralytics/yolov3/issues/141
# area: transfer & sync
# bug: the training config defaults to num_workers=0, so the heavy letterbox/HSV augmentation runs in the training process and the GPU sits idle waiting for each batch
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


@dataclass
class TrainConfig:
    img_size: int = 64
    batch_size: int = 16
    epochs: int = 1
    num_images: int = 48
    num_workers: int = 0  # expect[dl]: any
    lr: float = 1e-3


def letterbox(img, new_size, color=114):
    h, w = img.shape[:2]
    r = new_size / max(h, w)
    nh, nw = int(round(h * r)), int(round(w * r))
    ys = (np.arange(nh) / r).astype(np.int64).clip(0, h - 1)
    xs = (np.arange(nw) / r).astype(np.int64).clip(0, w - 1)
    resized = img[ys][:, xs]
    out = np.full((new_size, new_size, 3), color, dtype=np.uint8)
    top, left = (new_size - nh) // 2, (new_size - nw) // 2
    out[top:top + nh, left:left + nw] = resized
    return out


def augment_hsv(img, rng, gain=0.5):
    scale = 1 + rng.uniform(-gain, gain, 3)
    return np.clip(img.astype(np.float32) * scale, 0, 255).astype(np.uint8)


class SyntheticDetectionDataset(Dataset):
    def __init__(self, n, img_size, seed=0):
        self.n, self.img_size, self.seed = n, img_size, seed

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        rng = np.random.default_rng(self.seed + i)
        h, w = rng.integers(120, 200, size=2)
        img = rng.integers(0, 255, size=(h, w, 3), dtype=np.uint8)
        img = augment_hsv(letterbox(img, self.img_size), rng)
        if rng.random() < 0.5:
            img = img[:, ::-1]
        box = np.concatenate([rng.uniform(0.2, 0.8, 2), rng.uniform(0.05, 0.2, 2)]).astype(np.float32)
        tensor = torch.from_numpy(np.ascontiguousarray(img.transpose(2, 0, 1))).float() / 255.0
        return tensor, torch.from_numpy(box)


def build_loader(cfg, dataset):
    return DataLoader(dataset, batch_size=cfg.batch_size, shuffle=True,
                      num_workers=cfg.num_workers,  # expect[dl]: any
                      drop_last=True)


class TinyDetector(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.SiLU(),
                                      nn.Conv2d(16, 32, 3, 2, 1), nn.SiLU(),
                                      nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.box_head = nn.Linear(32, 4)

    def forward(self, x):
        return torch.sigmoid(self.box_head(self.features(x)))


def train(cfg):
    torch.manual_seed(0)
    loader = build_loader(cfg, SyntheticDetectionDataset(cfg.num_images, cfg.img_size))
    model = TinyDetector().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    total = torch.zeros((), device=device)
    for _ in range(cfg.epochs):
        for imgs, boxes in loader:
            imgs, boxes = imgs.to(device), boxes.to(device)
            loss = nn.functional.smooth_l1_loss(model(imgs), boxes)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.detach()
    return total.item() / (cfg.epochs * len(loader))


if __name__ == "__main__":
    print(f"mean box loss {train(TrainConfig()):.4f}")
