"""A dataset that is slow per sample, loaded on the main thread, feeding a tiny step."""

import time

import torch
from torch.utils.data import DataLoader, Dataset


class Slow(Dataset):
    # 30 batches of 8 at 5 ms a sample: enough batches and loop time to be evidence.
    def __len__(self):
        return 240

    def __getitem__(self, i):
        time.sleep(0.005)
        return torch.ones(4)


for batch in DataLoader(Slow(), batch_size=8):  # expect: TP250
    batch.sum()
