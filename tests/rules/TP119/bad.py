import torch
import torch.nn as nn


class Denoiser(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(8, 8)
        self.device = next(self.parameters()).device

    def forward(self, x):
        return self.net(x + torch.randn(x.shape, device=self.device))


class CausalLM(nn.Module):
    def __init__(self, vocab, dim):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.dev = self.tok.weight.device

    def mask(self, n):
        return torch.triu(torch.ones(n, n), diagonal=1).bool().to(self.dev)

    def forward(self, idx):
        return self.tok(idx), self.mask(idx.size(1))


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
        self.home = next(iter(self.body.parameters())).device

    def init_hidden(self, batch):
        return torch.zeros(batch, 4, device=self.home)


class Sampler(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.device = torch.device("cpu")

    def forward(self, x):
        return self.proj(x.to(self.device))


class Equalizer(nn.Module):
    def __init__(self, bins=64, device="cpu"):
        super().__init__()
        self.bins = bins
        self.device = device
        self.gain = nn.Parameter(torch.zeros(bins))

    def forward(self, spectrum):
        grid = torch.linspace(0, 1, self.bins, device=self.device)
        return spectrum * self.gain * grid


equalizer = Equalizer(bins=32).to(torch.device("cuda" if torch.cuda.is_available() else "cpu"))
