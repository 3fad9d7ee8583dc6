# twin of: bugs/dp_sync08_bidir_convlstm_numpy_flip.py
# area: transfer & sync
# correct: the sequence is reversed with torch.flip on the device it already lives on, so no host round trip in the forward pass
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class CropConfig:
    bands: int = 4
    timesteps: int = 6
    size: int = 12
    hidden: int = 8
    n_classes: int = 5
    batch_size: int = 4
    steps: int = 5
    lr: float = 3e-3


class ConvLSTMCell(nn.Module):
    def __init__(self, c_in, c_hidden, k=3):
        super().__init__()
        self.c_hidden = c_hidden
        self.conv = nn.Conv2d(c_in + c_hidden, 4 * c_hidden, k, padding=k // 2)

    def forward(self, x, state):
        h, c = state
        i, f, o, g = self.conv(torch.cat([x, h], dim=1)).chunk(4, dim=1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        return h, c


class ConvLSTM(nn.Module):
    def __init__(self, c_in, c_hidden):
        super().__init__()
        self.cell = ConvLSTMCell(c_in, c_hidden)

    def forward(self, seq):
        b, t, _, hgt, wid = seq.shape
        h = seq.new_zeros(b, self.cell.c_hidden, hgt, wid)
        c = torch.zeros_like(h)
        for step in range(t):
            h, c = self.cell(seq[:, step], (h, c))
        return h


def reverse_time(seq):
    return torch.flip(seq, dims=[1])


class BiConvLSTMSegmenter(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.fwd = ConvLSTM(cfg.bands, cfg.hidden)
        self.bwd = ConvLSTM(cfg.bands, cfg.hidden)
        self.classifier = nn.Conv2d(2 * cfg.hidden, cfg.n_classes, 1)

    def forward(self, inputs):
        h_fwd = self.fwd(inputs)
        h_bwd = self.bwd(reverse_time(inputs))
        return self.classifier(torch.cat([h_fwd, h_bwd], dim=1))


def synthetic_field_batch(cfg, device):
    x = torch.randn(cfg.batch_size, cfg.timesteps, cfg.bands, cfg.size, cfg.size, device=device)
    phenology = x.mean(dim=(1, 2))
    edges = torch.linspace(-0.6, 0.6, cfg.n_classes - 1, device=device)
    y = torch.bucketize(phenology, edges)
    return x, y


def train(cfg):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = BiConvLSTMSegmenter(cfg).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    history = []
    for _ in range(cfg.steps):
        x, y = synthetic_field_batch(cfg, device)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        history.append(loss.detach())
    return torch.stack(history)


if __name__ == "__main__":
    torch.manual_seed(0)
    losses = train(CropConfig())
    print("first/last loss:", [round(v, 4) for v in losses[[0, -1]].tolist()])
