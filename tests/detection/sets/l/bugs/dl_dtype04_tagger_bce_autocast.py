# source: https://github.com/pytorch/pytorch/issues/61098
# area: dtype
# bug: the model ends in sigmoid and the loss is nn.BCELoss; under CUDA float16 autocast binary_cross_entropy is refused as unsafe, so mixed-precision training crashes on the GPU
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


@dataclass
class TrainConfig:
    n_mels: int = 40
    frames: int = 48
    num_tags: int = 10
    batch_size: int = 16
    epochs: int = 2
    lr: float = 1e-3


class SyntheticClips(Dataset):
    def __init__(self, cfg: TrainConfig, n=48, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.specs = torch.randn(n, 1, cfg.n_mels, cfg.frames, generator=g)
        self.tags = (torch.rand(n, cfg.num_tags, generator=g) < 0.2).float()

    def __len__(self):
        return self.specs.shape[0]

    def __getitem__(self, i):
        return self.specs[i], self.tags[i]


class AudioTagger(nn.Module):
    def __init__(self, cfg: TrainConfig):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        )
        self.classifier = nn.Linear(32, cfg.num_tags)

    def forward(self, spec):
        return torch.sigmoid(self.classifier(self.features(spec)))


class Trainer:
    def __init__(self, model, cfg: TrainConfig, device):
        self.model = model.to(device)
        self.cfg = cfg
        self.device = device
        self.use_amp = device.type == "cuda"
        self.criterion = nn.BCELoss()
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.use_amp)

    def train_step(self, spec, tags):
        spec = spec.to(self.device)
        tags = tags.to(self.device)
        with torch.autocast(device_type=self.device.type, dtype=torch.float16, enabled=self.use_amp):
            probs = self.model(spec)
            loss = self.criterion(probs, tags)  # expect: any
        self.optimizer.zero_grad(set_to_none=True)
        self.scaler.scale(loss).backward()
        self.scaler.step(self.optimizer)
        self.scaler.update()
        return loss.detach()

    def fit(self, loader):
        for epoch in range(self.cfg.epochs):
            self.model.train()
            running = torch.zeros((), device=self.device)
            for spec, tags in loader:
                running += self.train_step(spec, tags)
            print(f"epoch {epoch}: mean loss {(running / len(loader)).item():.4f}")


def main():
    torch.manual_seed(0)
    cfg = TrainConfig()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    loader = DataLoader(SyntheticClips(cfg), batch_size=cfg.batch_size, shuffle=True)
    trainer = Trainer(AudioTagger(cfg), cfg, device)
    trainer.fit(loader)


if __name__ == "__main__":
    main()
