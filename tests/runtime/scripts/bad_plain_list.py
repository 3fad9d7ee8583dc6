"""Layers kept in a plain list are never moved by model.to()."""

import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = [nn.Linear(4, 4)]
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        x = self.layers[0](x)  # expect: TP150
        return self.head(x)


model = Net().to("cuda")
model(torch.zeros(2, 4).cuda())
