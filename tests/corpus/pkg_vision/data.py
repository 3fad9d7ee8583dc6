"""Images of one bright dot; the target is the dot's (x, y) position in [-1, 1]."""

import numpy as np
import torch
from torch.utils.data import Dataset


class DotDataset(Dataset):
    def __init__(self, n, size=12, seed=0):
        rng = np.random.default_rng(seed)
        self.size = size
        self.positions = rng.uniform(-0.8, 0.8, size=(n, 2)).astype(np.float32)

    def __len__(self):
        return len(self.positions)

    def __getitem__(self, index):
        x, y = self.positions[index]
        coords = np.linspace(-1, 1, self.size, dtype=np.float32)
        image = np.exp(-((coords[None, :] - x) ** 2 + (coords[:, None] - y) ** 2) / 0.02)
        return torch.from_numpy(image[None]), torch.from_numpy(self.positions[index])
