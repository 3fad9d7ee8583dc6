import torch
from torch.utils.data import Dataset


class Points(Dataset):
    def __init__(self, n):
        self.x = torch.randn(n, 3, device="cuda")

    def __getitem__(self, i):
        return self.x[i].cuda()

    def __len__(self):
        return len(self.x)
