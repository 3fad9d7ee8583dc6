import torch
from torch import nn


class Scaler(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.scale = torch.ones(n)

    def forward(self, x):
        return x * self.scale
