# source: https://github.com/pytorch/pytorch/issues/8017
# area: device placement
# bug: the conv stages live in a plain Python list, so model.to(device) leaves them on the CPU and the first conv sees a CUDA input
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


@dataclass
class KWSConfig:
    sample_rate: int = 4000
    clip_seconds: float = 0.25
    num_classes: int = 5
    base_channels: int = 8
    num_stages: int = 3
    batch_size: int = 16
    epochs: int = 2
    lr: float = 3e-3


class SyntheticKeywords(Dataset):
    """Each keyword is a tone at a class-specific pitch plus noise."""

    def __init__(self, cfg, n_items=128, seed=0):
        g = torch.Generator().manual_seed(seed)
        n = int(cfg.sample_rate * cfg.clip_seconds)
        t = torch.arange(n) / cfg.sample_rate
        self.labels = torch.randint(0, cfg.num_classes, (n_items,), generator=g)
        freqs = 200.0 + 150.0 * self.labels.float()
        self.waves = torch.sin(2 * math.pi * freqs[:, None] * t[None, :])
        self.waves += 0.3 * torch.randn(self.waves.shape, generator=g)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        return self.waves[idx].unsqueeze(0), self.labels[idx]


class KeywordNet(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        in_ch, out_ch = 1, cfg.base_channels
        self.stages = []  # expect[w]: any
        for _ in range(cfg.num_stages):
            self.stages.append(nn.Sequential(  # expect[w]: any
                nn.Conv1d(in_ch, out_ch, kernel_size=9, stride=2, padding=4),
                nn.BatchNorm1d(out_ch),
                nn.ReLU(),
            ))
            in_ch, out_ch = out_ch, out_ch * 2
        self.head = nn.Linear(in_ch, cfg.num_classes)

    def forward(self, wave):
        x = wave
        for stage in self.stages:
            x = stage(x)
        x = x.mean(dim=-1)
        return self.head(x)


def run_epoch(model, loader, device, optimizer=None):
    training = optimizer is not None
    model.train(training)
    total_loss = torch.zeros((), device=device)
    correct = torch.zeros((), device=device, dtype=torch.long)
    seen = 0
    with torch.set_grad_enabled(training):
        for wave, label in loader:
            wave, label = wave.to(device), label.to(device)
            logits = model(wave)
            loss = F.cross_entropy(logits, label)
            if training:
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            total_loss += loss.detach() * label.numel()
            correct += (logits.argmax(-1) == label).sum()
            seen += label.numel()
    return (total_loss / seen).item(), (correct.float() / seen).item()


def main():
    torch.manual_seed(0)
    cfg = KWSConfig()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train_dl = DataLoader(SyntheticKeywords(cfg, 96, seed=1), batch_size=cfg.batch_size, shuffle=True)
    val_dl = DataLoader(SyntheticKeywords(cfg, 32, seed=2), batch_size=cfg.batch_size)
    model = KeywordNet(cfg).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    for epoch in range(cfg.epochs):
        tr_loss, tr_acc = run_epoch(model, train_dl, device, optimizer)
        va_loss, va_acc = run_epoch(model, val_dl, device)
        print(f"epoch {epoch} train {tr_loss:.3f}/{tr_acc:.2f} val {va_loss:.3f}/{va_acc:.2f}")


if __name__ == "__main__":
    main()
