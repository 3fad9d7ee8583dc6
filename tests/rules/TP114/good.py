import torch
from torch.utils.data import Dataset


class Points(Dataset):
    def __init__(self, n):
        self.x = torch.randn(n, 3)

    def __getitem__(self, i):
        return self.x[i].to(torch.float32)

    def __len__(self):
        return len(self.x)


class Model:
    def run(self, x):
        return x.cuda()
