# source: https://github.com/huggingface/pytorch-image-models/issues/2127
# area: device placement
# bug: EMA copy is kept on the CPU (ema_device="cpu") but update() lerps it with the live GPU weights without moving them, so the first update fails with a cuda/cpu device mismatch
import copy
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class TrainConfig:
    epochs: int = 2
    steps_per_epoch: int = 20
    batch_size: int = 32
    lr: float = 1e-3
    ema_decay: float = 0.998
    ema_device: str = "cpu"


class SmallConvNet(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Linear(32, num_classes)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


class ModelEmaV3(nn.Module):
    def __init__(self, model, decay=0.999, device=None):
        super().__init__()
        self.module = copy.deepcopy(model).eval()
        for p in self.module.parameters():
            p.requires_grad_(False)
        self.decay = decay
        self.device = device
        if device is not None:
            self.module.to(device=device)

    @torch.no_grad()
    def update(self, model):
        ema_state = self.module.state_dict()
        model_state = model.state_dict()
        for name, ema_v in ema_state.items():
            model_v = model_state[name]
            if ema_v.is_floating_point():
                ema_v.lerp_(model_v, weight=1.0 - self.decay)  # expect: any
            else:
                ema_v.copy_(model_v)


def synthetic_batch(batch_size, device):
    x = torch.randn(batch_size, 3, 32, 32, device=device)
    y = torch.randint(0, 10, (batch_size,), device=device)
    return x, y


def train(cfg):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = SmallConvNet().to(device)
    ema = ModelEmaV3(model, decay=cfg.ema_decay, device=cfg.ema_device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr)

    for epoch in range(cfg.epochs):
        model.train()
        running = torch.zeros((), device=device)
        for _ in range(cfg.steps_per_epoch):
            x, y = synthetic_batch(cfg.batch_size, device)
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            ema.update(model)
            running += loss.detach()
        print(f"epoch {epoch}: loss {(running / cfg.steps_per_epoch).item():.4f}")
    return model, ema


if __name__ == "__main__":
    torch.manual_seed(0)
    train(TrainConfig())
