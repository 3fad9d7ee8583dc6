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
