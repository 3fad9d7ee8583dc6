import torch
import torch.nn as nn


class WithProperty(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(8, 8)

    @property
    def device(self):
        return next(self.parameters()).device

    def forward(self, x):
        return self.net(x + torch.randn(x.shape, device=self.device))


class UpdatedOnMove(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(8, 8)
        self.device = next(self.parameters()).device

    def _apply(self, fn, recurse=True):
        out = super()._apply(fn, recurse)
        self.device = next(self.parameters()).device
        return out

    def forward(self, x):
        return self.net(x + torch.randn(x.shape, device=self.device))


class GivenDevice(nn.Module):
    def __init__(self, device):
        super().__init__()
        self.net = nn.Linear(8, 8, device=device)
        self.device = device

    def forward(self, x):
        return self.net(x + torch.randn(x.shape, device=self.device))


class UsedOnlyInInit(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(8, 8)
        self.device = next(self.parameters()).device
        self.register_buffer("scale", torch.ones(8, device=self.device))

    def forward(self, x):
        return self.net(x) * self.scale


class ReadsAtCallTime(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(8, 8)
        self.start_device = next(self.parameters()).device  # recorded, never used as a device

    def forward(self, x):
        return self.net(x + torch.randn(x.shape, device=x.device))


class Reassigned(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(8, 8)
        self.device = next(self.parameters()).device

    def forward(self, x):
        self.device = x.device
        return self.net(x + torch.randn(x.shape, device=self.device))


class Equalizer(nn.Module):
    def __init__(self, bins=64, device="cpu"):
        super().__init__()
        self.bins = bins
        self.device = device
        self.gain = nn.Parameter(torch.zeros(bins, device=device))

    def forward(self, spectrum):
        grid = torch.linspace(0, 1, self.bins, device=self.device)
        return spectrum * self.gain * grid


equalizer = Equalizer(bins=32, device=torch.device("cuda" if torch.cuda.is_available() else "cpu"))
