# source: https://github.com/Lightning-AI/torchmetrics/issues/608
# area: device placement
# bug: the stateful metric module is created inside the training loop and never moved to the device, so its CPU confusion-matrix buffer is updated with GPU predictions and crashes
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Config:
    num_classes: int = 6
    n_mels: int = 32
    frames: int = 64
    batch_size: int = 16
    epochs: int = 2
    steps_per_epoch: int = 6
    lr: float = 1e-3


class MacroRecall(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.num_classes = num_classes
        self.register_buffer("confmat", torch.zeros(num_classes, num_classes, dtype=torch.long))

    def update(self, probs, target):
        pred = probs.argmax(dim=1)
        idx = target * self.num_classes + pred
        self.confmat.view(-1).index_add_(0, idx, torch.ones_like(idx))

    def compute(self):
        cm = self.confmat.float()
        per_class = cm.diag() / cm.sum(dim=1).clamp(min=1)
        return per_class.mean()

    def reset(self):
        self.confmat.zero_()


class AudioCNN(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.fc = nn.Linear(32, cfg.num_classes)

    def forward(self, spec):
        h = self.features(spec.unsqueeze(1))
        h = h.mean(dim=2).amax(dim=2)
        return self.fc(h)


class SyntheticClips(torch.utils.data.Dataset):
    def __init__(self, cfg, n):
        g = torch.Generator().manual_seed(3)
        self.labels = torch.randint(0, cfg.num_classes, (n,), generator=g)
        self.specs = torch.randn(n, cfg.n_mels, cfg.frames, generator=g)
        band = torch.arange(cfg.n_mels)[None, :, None]
        self.specs += (band // (cfg.n_mels // cfg.num_classes) == self.labels[:, None, None]).float()

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.specs[i], self.labels[i]


def train_loop(epoch, loader, model, optim, cfg, device):
    model.train()
    epoch_loss = torch.zeros((), device=device)
    metric = MacroRecall(num_classes=cfg.num_classes)  # expect: any
    for step, (spec, label) in enumerate(loader):
        spec = spec.to(device).float()
        label = label.to(device).long()
        logits = model(spec)
        loss = F.cross_entropy(logits, label)
        optim.zero_grad()
        loss.backward()
        optim.step()
        metric.update(torch.softmax(logits.detach(), dim=1), label)
        epoch_loss += loss.detach()
    recall = metric.compute()
    print(f"epoch {epoch}: loss {(epoch_loss / (step + 1)).item():.4f} macro recall {recall.item():.3f}")


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cfg = Config()
    data = SyntheticClips(cfg, cfg.batch_size * cfg.steps_per_epoch)
    loader = torch.utils.data.DataLoader(data, batch_size=cfg.batch_size, shuffle=True)
    model = AudioCNN(cfg).to(device)
    optim = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    for epoch in range(cfg.epochs):
        train_loop(epoch, loader, model, optim, cfg, device)


if __name__ == "__main__":
    main()
