"""A dataset that is slow per sample, loaded on the main thread, feeding a tiny step."""

import time

import torch
from torch.utils.data import DataLoader, Dataset


class Slow(Dataset):
    def __len__(self):
        return 40

    def __getitem__(self, i):
        time.sleep(0.001)
        return torch.ones(4)


for batch in DataLoader(Slow(), batch_size=8):  # expect: TP250
    batch.sum()
