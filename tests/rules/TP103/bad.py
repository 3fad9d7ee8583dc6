import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        noise = torch.randn(x.shape)
        return self.fc(x + noise + self.offset(x))

    def offset(self, x):
        return torch.arange(8)
