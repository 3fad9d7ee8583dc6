"""The model: a gated MLP with a running-scale tensor and a noise helper."""

import torch
import torch.nn as nn


def add_noise(h, scale):
    return h + scale * torch.randn(h.shape)


class GatedMLP(nn.Module):
    def __init__(self, features=6, hidden=20):
        super().__init__()
        self.inp = nn.Linear(features, hidden)
        self.gate = nn.Linear(features, hidden)
        self.out = nn.Linear(hidden, 1)
        self.bias_scale = torch.full((hidden,), 0.5)

    def forward(self, x):
        h = torch.tanh(self.inp(x)) * torch.sigmoid(self.gate(x)) + self.bias_scale
        h = add_noise(h, 0.01)
        return self.out(h)
