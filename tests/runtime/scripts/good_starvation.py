"""Ready-made batches and a step that does real work: the loop does not wait for data."""

import time

import torch
from torch.utils.data import DataLoader, Dataset


class Batches(Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        return torch.ones(8, 4)


for batch in DataLoader(Batches(), batch_size=None):
    time.sleep(0.02)
    batch.sum()
