# source: https://discuss.pytorch.org/t/understanding-pin-memory-performance-boosts/181327
# area: transfer & sync
# bug: batches are copied with non_blocking=True but the DataLoader is built with pin_memory=False, so every copy comes from pageable memory and cannot overlap compute
import math
import torch
import torch.nn as nn
from dataclasses import dataclass
from torch.utils.data import DataLoader, Dataset


@dataclass
class DataConfig:
    num_clips: int = 160
    sample_rate: int = 8000
    clip_seconds: float = 0.5
    num_classes: int = 5
    batch_size: int = 32
    num_workers: int = 2
    pin_memory: bool = False  # expect[p]: any


class ToneClips(Dataset):
    def __init__(self, cfg, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.length = int(cfg.sample_rate * cfg.clip_seconds)
        self.labels = torch.randint(0, cfg.num_classes, (cfg.num_clips,), generator=g)
        self.phases = torch.rand(cfg.num_clips, generator=g) * 2 * math.pi
        self.sr = cfg.sample_rate

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        t = torch.arange(self.length) / self.sr
        freq = 200.0 * (1 + int(self.labels[i]))
        wave = torch.sin(2 * math.pi * freq * t + self.phases[i])
        wave = wave + 0.3 * torch.randn(self.length)
        return wave.unsqueeze(0), self.labels[i]


def build_loader(cfg, shuffle=True):
    return DataLoader(ToneClips(cfg), batch_size=cfg.batch_size, shuffle=shuffle,
                      num_workers=cfg.num_workers, pin_memory=cfg.pin_memory,
                      persistent_workers=cfg.num_workers > 0)


class RawAudioCNN(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        layers, ch = [], 1
        for out_ch, k, s in [(16, 64, 8), (32, 9, 2), (64, 9, 2)]:
            layers += [nn.Conv1d(ch, out_ch, k, stride=s, padding=k // 2), nn.BatchNorm1d(out_ch), nn.ReLU()]
            ch = out_ch
        self.features = nn.Sequential(*layers, nn.AdaptiveAvgPool1d(1))
        self.classifier = nn.Linear(ch, num_classes)

    def forward(self, wave):
        return self.classifier(self.features(wave).flatten(1))


def train(model, loader, device, epochs=2):
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(epochs):
        model.train()
        total = torch.zeros((), device=device)
        for wave, label in loader:
            wave = wave.to(device, non_blocking=True)  # expect[p]: any
            label = label.to(device, non_blocking=True)
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(wave), label)
            loss.backward()
            opt.step()
            total += loss.detach()
        print(f"epoch {epoch}: mean loss {(total / len(loader)).item():.4f}")


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    cfg = DataConfig()
    model = RawAudioCNN(cfg.num_classes).to(device)
    train(model, build_loader(cfg), device)


if __name__ == "__main__":
    main()
