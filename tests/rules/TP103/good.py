import math

import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.register_buffer("bias", torch.zeros(8))

    def forward(self, x, scale=torch.ones(1)):  # a default, made once
        noise = torch.randn(x.shape, device=x.device)
        return self.fc(x + noise + torch.zeros_like(x) + self.bias)


def helper():
    return torch.zeros(3)  # not reached from forward


class Attention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim
        self.qk = nn.Linear(dim, 2 * dim)

    def forward(self, x):
        q, k = self.qk(x).chunk(2, dim=-1)
        # a 0-dim CPU tensor may meet cuda tensors: no copy, no sync
        scale = torch.tensor(math.sqrt(self.dim))
        return (q @ k.transpose(1, 2)) / scale * torch.tensor(0.5) + torch.tensor(-self.dim / 2)
