# source: https://github.com/megvii-research/OccDepth/issues/9
# area: transfer & sync
# bug: the CPU-heavy voxelisation runs in the main process (num_workers=0), so the GPU idles waiting for every batch
from types import SimpleNamespace

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

cfg = SimpleNamespace(
    data=SimpleNamespace(num_samples=32, image_hw=(48, 64), voxel_size=(16, 16, 8), max_depth=20.0),
    loader=SimpleNamespace(batch_size=4, num_workers=0, shuffle=True),  # expect: any
    train=SimpleNamespace(epochs=2, lr=1e-3),
)


def depth_to_occupancy(depth, K, voxel_size, max_depth):
    """Back-project a depth map into camera space and voxelise it (pure NumPy, CPU bound)."""
    h, w = depth.shape
    us, vs = np.meshgrid(np.arange(w), np.arange(h))
    z = depth.reshape(-1)
    x = (us.reshape(-1) - K[0, 2]) * z / K[0, 0]
    y = (vs.reshape(-1) - K[1, 2]) * z / K[1, 1]
    pts = np.stack([x, y, z], axis=1)
    lo = np.array([-max_depth / 2, -max_depth / 4, 0.0])
    hi = np.array([max_depth / 2, max_depth / 4, max_depth])
    idx = ((pts - lo) / (hi - lo) * np.array(voxel_size)).astype(np.int64)
    keep = np.all((idx >= 0) & (idx < np.array(voxel_size)), axis=1)
    occ = np.zeros(voxel_size, dtype=np.float32)
    np.add.at(occ, tuple(idx[keep].T), 1.0)
    return np.minimum(occ, 1.0)


class StereoOccDataset(Dataset):
    def __init__(self, dcfg, seed=0):
        self.cfg = dcfg
        self.rng_seed = seed
        h, w = dcfg.image_hw
        self.K = np.array([[w, 0, w / 2], [0, w, h / 2], [0, 0, 1]], dtype=np.float64)

    def __len__(self):
        return self.cfg.num_samples

    def __getitem__(self, i):
        rng = np.random.default_rng(self.rng_seed + i)
        h, w = self.cfg.image_hw
        image = rng.random((3, h, w), dtype=np.float32)
        depth = rng.uniform(1.0, self.cfg.max_depth, size=(h, w))
        occ = depth_to_occupancy(depth, self.K, self.cfg.voxel_size, self.cfg.max_depth)
        return torch.from_numpy(image), torch.from_numpy(occ)


class OccHead(nn.Module):
    def __init__(self, voxel_size):
        super().__init__()
        self.voxel_size = voxel_size
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 32, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.ReLU(),
            nn.AdaptiveAvgPool2d((voxel_size[1], voxel_size[0])),
        )
        self.lift = nn.Conv2d(64, voxel_size[2], 1)

    def forward(self, img):
        feat = self.lift(self.backbone(img))  # B, Z, Y, X
        return feat.permute(0, 3, 2, 1)  # B, X, Y, Z


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    ds = StereoOccDataset(cfg.data)
    loader = DataLoader(ds, batch_size=cfg.loader.batch_size, shuffle=cfg.loader.shuffle,
                        num_workers=cfg.loader.num_workers)
    model = OccHead(cfg.data.voxel_size).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.train.lr)
    for epoch in range(cfg.train.epochs):
        running = torch.zeros((), device=device)
        for img, occ in loader:
            img, occ = img.to(device), occ.to(device)
            loss = F.binary_cross_entropy_with_logits(model(img), occ)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            running += loss.detach()
        print(f"epoch {epoch}: mean loss {(running / len(loader)).item():.4f}")


if __name__ == "__main__":
    main()
