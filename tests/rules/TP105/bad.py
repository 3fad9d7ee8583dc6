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
