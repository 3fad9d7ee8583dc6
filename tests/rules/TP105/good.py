import torch
from torch import nn


class Scaler(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.register_buffer("scale", torch.ones(n))
        self.weight = nn.Parameter(torch.ones(n))

    def forward(self, x):
        return x * self.scale * self.weight


class NotAModule:
    def __init__(self):
        self.cache = torch.zeros(3)
