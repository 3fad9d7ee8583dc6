# source: https://github.com/Lightning-AI/pytorch-lightning/issues/5140
# area: AMP
# bug: the model is cast to .half() and then trained with GradScaler; on a GPU the fp16 gradients make scaler.step() raise "Attempting to unscale FP16 gradients"
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


@dataclass
class KWSConfig:
    n_mels: int = 40
    frames: int = 64
    n_classes: int = 12
    batch_size: int = 32
    epochs: int = 2
    lr: float = 3e-3
    fp16: bool = True


class KeywordSpotter(nn.Module):
    def __init__(self, cfg: KWSConfig):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv1d(cfg.n_mels, 64, kernel_size=5, padding=2),
            nn.BatchNorm1d(64),
            nn.ReLU(),
            nn.Conv1d(64, 64, kernel_size=5, padding=2, dilation=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool1d(1),
        )
        self.head = nn.Linear(64, cfg.n_classes)

    def forward(self, mel):
        return self.head(self.features(mel).flatten(1))


def synthetic_speech_commands(cfg: KWSConfig, n: int = 256):
    g = torch.Generator().manual_seed(0)
    labels = torch.randint(0, cfg.n_classes, (n,), generator=g)
    mel = torch.randn(n, cfg.n_mels, cfg.frames, generator=g)
    mel += labels.view(-1, 1, 1).float() / cfg.n_classes
    return TensorDataset(mel, labels)


def build(cfg: KWSConfig, device):
    model = KeywordSpotter(cfg).to(device)
    use_amp = cfg.fp16 and device.type == "cuda"
    if use_amp:
        model = model.half()  # expect: any
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=1e-2)
    scaler = torch.amp.GradScaler(device.type, enabled=use_amp)
    return model, optimizer, scaler, use_amp


def train(cfg: KWSConfig):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model, optimizer, scaler, use_amp = build(cfg, device)
    loader = DataLoader(synthetic_speech_commands(cfg), batch_size=cfg.batch_size,
                        shuffle=True, pin_memory=device.type == "cuda")
    criterion = nn.CrossEntropyLoss(label_smoothing=0.05)
    for epoch in range(cfg.epochs):
        model.train()
        running = torch.zeros((), device=device)
        for mel, label in loader:
            mel = mel.to(device, non_blocking=True)
            label = label.to(device, non_blocking=True)
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
                logits = model(mel)
                loss = criterion(logits, label)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            running += loss.detach().float()
        mean_loss = (running / len(loader)).item()
        print(f"epoch {epoch}: loss={mean_loss:.4f} ppl={math.exp(mean_loss):.2f}")
    return model


if __name__ == "__main__":
    torch.manual_seed(0)
    train(KWSConfig())
