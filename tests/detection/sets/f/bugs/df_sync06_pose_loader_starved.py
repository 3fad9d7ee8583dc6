# source: https://github.com/NVlabs/Deep_Object_Pose/issues/88
# area: transfer & sync
# bug: heavy per-sample CPU augmentation and belief-map rendering run in the main process (num_workers=0), so the GPU sits idle waiting for every batch
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


@dataclass
class TrainOptions:
    image_size: int = 64
    n_keypoints: int = 9
    sigma: float = 2.0
    batch_size: int = 8
    epochs: int = 2
    lr: float = 1e-4
    workers: int = 0  # expect[w]: any


class SyntheticPoseDataset(Dataset):
    def __init__(self, opt, n_samples=32):
        self.opt = opt
        self.n_samples = n_samples

    def __len__(self):
        return self.n_samples

    def _augment(self, img, rng):
        img = img * rng.uniform(0.7, 1.3, size=(3, 1, 1)) + rng.uniform(-0.1, 0.1, size=(3, 1, 1))
        noise = rng.normal(0.0, 0.02, size=img.shape)
        if rng.random() < 0.5:
            img = img[:, :, ::-1]
        return np.clip(img + noise, 0.0, 1.0)

    def _belief_maps(self, points):
        s = self.opt.image_size
        yy, xx = np.mgrid[0:s, 0:s].astype(np.float32)
        maps = np.zeros((self.opt.n_keypoints, s // 4, s // 4), dtype=np.float32)
        for k, (px, py) in enumerate(points):
            g = np.exp(-((xx - px) ** 2 + (yy - py) ** 2) / (2 * self.opt.sigma ** 2))
            maps[k] = g.reshape(s // 4, 4, s // 4, 4).mean(axis=(1, 3))
        return maps

    def __getitem__(self, idx):
        rng = np.random.default_rng(idx)
        s = self.opt.image_size
        img = rng.random((3, s, s))
        points = rng.uniform(8, s - 8, size=(self.opt.n_keypoints, 2))
        img = self._augment(img, rng)
        beliefs = self._belief_maps(points)
        return torch.from_numpy(np.ascontiguousarray(img, dtype=np.float32)), torch.from_numpy(beliefs)


class BeliefNet(nn.Module):
    def __init__(self, n_keypoints=9):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 32, 3, stride=2, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(inplace=True),
        )
        self.head = nn.Conv2d(64, n_keypoints, 1)

    def forward(self, x):
        return self.head(self.features(x))


def main():
    torch.manual_seed(0)
    opt = TrainOptions()
    dataset = SyntheticPoseDataset(opt)
    loader = DataLoader(dataset, batch_size=opt.batch_size, shuffle=True,
                        num_workers=opt.workers, pin_memory=True)  # expect[w]: any
    net = BeliefNet(opt.n_keypoints).to(device)
    optimizer = torch.optim.Adam(net.parameters(), lr=opt.lr)
    for epoch in range(opt.epochs):
        epoch_loss = torch.zeros((), device=device)
        for img, target in loader:
            img = img.to(device, non_blocking=True)
            target = target.to(device, non_blocking=True)
            loss = nn.functional.mse_loss(net(img), target)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            epoch_loss += loss.detach()
        print(f"epoch {epoch}: loss {(epoch_loss / len(loader)).item():.6f}")


if __name__ == "__main__":
    main()
