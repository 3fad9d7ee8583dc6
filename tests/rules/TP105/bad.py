import torch
from torch import nn


class Scaler(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.scale = torch.ones(n)

    def forward(self, x):
        return x * self.scale


class OneHot(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.table = self.one_hot(n)  # a helper that returns a CPU tensor

    def one_hot(self, n):
        return torch.eye(n)

    def forward(self, x):
        return x @ self.table


class BinaryConv(nn.Conv2d):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.set_schedule(10.0, 0.1)

    def set_schedule(self, k, t, device=None):
        self.k = torch.tensor([k], device=device)  # set up from __init__, never a buffer
        self.t = torch.tensor([t], device=device)


def sincos_table(n, dim):
    pos = torch.arange(n, dtype=torch.float32)[:, None]
    return torch.sin(pos / 10000 ** (torch.arange(dim) / dim))


class Encoder(nn.Module):
    def __init__(self, levels):
        super().__init__()
        for i in levels:
            table = sincos_table(16 * i, 32)
            setattr(self, f"pos_embed{i}", table)  # a plain attribute under a built name
