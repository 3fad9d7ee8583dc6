# source: https://github.com/jhb86253817/PIPNet/issues/50
# area: transfer & sync
# bug: per-sample numpy augmentation and heatmap rendering run in the main process (num_workers=0), so the GPU idles while each batch is prepared
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class FaceLandmarkDataset(Dataset):
    def __init__(self, n=96, size=64, n_points=19, stride=8, seed=0):
        rng = np.random.default_rng(seed)
        self.images = rng.random((n, size, size, 3), dtype=np.float32)
        self.points = rng.uniform(0.2, 0.8, (n, n_points, 2)).astype(np.float32)
        self.size, self.stride = size, stride
        self.rng = np.random.default_rng(seed + 1)

    def __len__(self):
        return len(self.images)

    def _random_affine(self, img, pts):
        angle = np.deg2rad(self.rng.uniform(-30, 30))
        scale = self.rng.uniform(0.9, 1.1)
        c, s = np.cos(angle) * scale, np.sin(angle) * scale
        h = w = self.size
        ys, xs = np.mgrid[0:h, 0:w].astype(np.float32)
        xc, yc = xs - w / 2, ys - h / 2
        src_x = np.clip(c * xc + s * yc + w / 2, 0, w - 1).astype(np.int64)
        src_y = np.clip(-s * xc + c * yc + h / 2, 0, h - 1).astype(np.int64)
        out = img[src_y, src_x]
        p = (pts - 0.5) * np.array([w, h])
        inv = np.array([[c, -s], [s, c]]) / (scale * scale)
        p = p @ inv.T / np.array([w, h]) + 0.5
        return out, np.clip(p, 0, 1).astype(np.float32)

    def _heatmaps(self, pts):
        g = self.size // self.stride
        ys, xs = np.mgrid[0:g, 0:g].astype(np.float32)
        maps = np.zeros((len(pts), g, g), dtype=np.float32)
        for k, (px, py) in enumerate(pts * g):
            maps[k] = np.exp(-((xs - px) ** 2 + (ys - py) ** 2) / 2.0)
        return maps

    def __getitem__(self, i):
        img, pts = self._random_affine(self.images[i], self.points[i])
        img = (img - 0.5) / 0.25
        return torch.from_numpy(img.transpose(2, 0, 1).copy()), torch.from_numpy(self._heatmaps(pts))


class HeatmapNet(nn.Module):
    def __init__(self, n_points=19):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, 32, 3, 2, 1), nn.ReLU(),
            nn.Conv2d(32, 64, 3, 2, 1), nn.ReLU(),
            nn.Conv2d(64, 64, 3, 2, 1), nn.ReLU(),
            nn.Conv2d(64, n_points, 1),
        )

    def forward(self, x):
        return self.net(x)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dataset = FaceLandmarkDataset()
    loader = DataLoader(dataset, batch_size=16, shuffle=True, num_workers=0)  # expect: any
    model = HeatmapNet().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(3):
        total = torch.zeros((), device=device)
        for imgs, maps in loader:
            imgs, maps = imgs.to(device), maps.to(device)
            loss = F.mse_loss(model(imgs), maps)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += loss.detach()
        print(f"epoch {epoch}: heatmap mse={(total / len(loader)).item():.5f}")


if __name__ == "__main__":
    main()
