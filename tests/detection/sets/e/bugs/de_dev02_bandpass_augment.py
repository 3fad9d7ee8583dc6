# source: https://github.com/iver56/torch-audiomentations/issues/137
# area: device placement
# bug: the random bandwidth fractions are drawn on the CPU while the centre frequencies are drawn on the batch's GPU device
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


@dataclass
class BandPassConfig:
    sample_rate: int = 16000
    min_center_hz: float = 200.0
    max_center_hz: float = 4000.0
    min_bw_fraction: float = 0.5
    max_bw_fraction: float = 1.99
    p: float = 0.5


class RandomBandPass(nn.Module):
    def __init__(self, cfg: BandPassConfig):
        super().__init__()
        self.cfg = cfg

    def randomize(self, batch_size, dev):
        c = self.cfg
        lo, hi = math.log(c.min_center_hz), math.log(c.max_center_hz)
        center = torch.exp(torch.empty(batch_size, device=dev).uniform_(lo, hi))
        fraction = torch.empty(batch_size).uniform_(c.min_bw_fraction, c.max_bw_fraction)  # expect[w]: any
        bandwidth = center * fraction  # expect[w]: any
        apply = torch.rand(batch_size, device=dev) < c.p
        return center, bandwidth, apply

    def forward(self, wav):
        b, _, t = wav.shape
        center, bandwidth, apply = self.randomize(b, wav.device)
        freqs = torch.fft.rfftfreq(t, d=1.0 / self.cfg.sample_rate, device=wav.device)
        low = (center - bandwidth / 2).clamp(min=0.0)
        high = center + bandwidth / 2
        keep = (freqs[None, :] >= low[:, None]) & (freqs[None, :] <= high[:, None])
        keep = keep | ~apply[:, None]
        spec = torch.fft.rfft(wav, dim=-1) * keep[:, None, :]
        return torch.fft.irfft(spec, n=t, dim=-1)


class KeywordNet(nn.Module):
    def __init__(self, n_cls=5):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv1d(1, 16, 80, stride=16), nn.ReLU(),
            nn.Conv1d(16, 32, 3, stride=2), nn.ReLU(),
            nn.AdaptiveAvgPool1d(1))
        self.head = nn.Linear(32, n_cls)

    def forward(self, wav):
        return self.head(self.conv(wav).squeeze(-1))


def main():
    torch.manual_seed(0)
    waves = torch.randn(64, 1, 8000)
    labels = torch.randint(0, 5, (64,))
    augment = RandomBandPass(BandPassConfig()).to(device)
    model = KeywordNet().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(3):
        for i in range(0, 64, 16):
            wav = waves[i:i + 16].to(device)
            tgt = labels[i:i + 16].to(device)
            loss = F.cross_entropy(model(augment(wav)), tgt)
            opt.zero_grad()
            loss.backward()
            opt.step()
    print("loss", loss.item())


if __name__ == "__main__":
    main()
