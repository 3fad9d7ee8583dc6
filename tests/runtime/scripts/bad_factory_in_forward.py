"""A tensor made inside forward without device= meets the model's activations on the GPU."""

import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        noise = torch.randn(x.shape)
        return self.fc(x + noise)  # expect: TP150


model = Net().to("cuda")
model(torch.zeros(2, 4, device="cuda"))
