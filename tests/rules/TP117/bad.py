import torch
import torch.nn as nn
from torch.nn import Parameter

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Calibrated(nn.Module):
    def __init__(self, n_classes):
        super().__init__()
        self.head = nn.Linear(16, n_classes)
        self.log_temp = nn.Parameter(torch.zeros(1)).to(device)
        self.bias = torch.nn.Parameter(torch.randn(n_classes)).cuda()
        self.scale = Parameter(torch.ones(n_classes)).to(device, torch.float16)

    def forward(self, x):
        return (self.head(x) + self.bias) * self.scale / self.log_temp.exp()


class HalfGate(nn.Module):
    def __init__(self, weight):
        super().__init__()
        self.gate = nn.Parameter(weight).half()


prompt = nn.Parameter(torch.randn(4, 16)).to(device=device)
optimizer = torch.optim.SGD([nn.Parameter(torch.ones(2)).to("cuda")], lr=0.1)


def stylize(content, device, steps=10):
    image = (torch.randn_like(content) * 1e-3).requires_grad_(True).to(device)
    noise = torch.zeros(3, 8, requires_grad=True).cuda()
    optimizer = torch.optim.Adam([image, noise], lr=0.03)
    for _ in range(steps):
        optimizer.zero_grad()
        (image - content).pow(2).sum().backward()
        optimizer.step()
    return image
