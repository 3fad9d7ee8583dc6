"""Synthetic data for the package: float64 NumPy features, float targets."""

import numpy as np
import torch
from torch.utils.data import Dataset


class WaveDataset(Dataset):
    def __init__(self, n=96, features=6):
        grid = np.linspace(-1.0, 1.0, n * features).reshape(n, features)
        self.inputs = np.sin(3 * grid)
        self.targets = self.inputs.sum(axis=1, keepdims=True).astype(np.float32)

    def __len__(self):
        return len(self.inputs)

    def __getitem__(self, i):
        return torch.from_numpy(self.inputs[i]).float(), torch.from_numpy(self.targets[i])
