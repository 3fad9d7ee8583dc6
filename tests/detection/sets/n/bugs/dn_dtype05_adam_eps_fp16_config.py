# source: https://github.com/pytorch/pytorch/issues/8860
# area: dtype
# bug: the config keeps Adam's default eps=1e-8 while the model is trained in pure fp16 on the GPU; 1e-8 rounds to 0 in half precision, so sqrt(v)+eps hits zero and the update becomes inf/NaN
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


@dataclass
class TrainConfig:
    lr: float = 1e-3
    betas: tuple = (0.9, 0.999)
    adam_eps: float = 1e-8  # expect[eps]: any
    weight_decay: float = 0.0
    epochs: int = 2
    batch_size: int = 32
    half_precision: bool = torch.cuda.is_available()


class ExpressionNet(nn.Module):
    """Small CNN for 48x48 grayscale face crops (7 expression classes)."""

    def __init__(self, num_classes=7):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(3),
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(32 * 9, 64), nn.ReLU(), nn.Linear(64, num_classes))

    def forward(self, x):
        return self.classifier(self.features(x))


def build_optimizer(model, cfg):
    return torch.optim.Adam(model.parameters(), lr=cfg.lr, betas=cfg.betas, eps=cfg.adam_eps,  # expect[eps]: any
                            weight_decay=cfg.weight_decay)


def synthetic_faces(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 1, 48, 48, generator=g)
    y = torch.randint(0, 7, (n,), generator=g)
    return x, y


def run_training(cfg):
    model = ExpressionNet().to(device)
    dtype = torch.float16 if cfg.half_precision else torch.float32
    model = model.to(dtype)
    optimizer = build_optimizer(model, cfg)
    x_all, y_all = synthetic_faces(64)
    x_all, y_all = x_all.to(device, dtype), y_all.to(device)
    for epoch in range(cfg.epochs):
        perm = torch.randperm(x_all.size(0), device=device)
        epoch_loss = torch.zeros((), device=device)
        for start in range(0, x_all.size(0), cfg.batch_size):
            idx = perm[start:start + cfg.batch_size]
            logits = model(x_all[idx])
            loss = F.cross_entropy(logits.float(), y_all[idx])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            epoch_loss += loss.detach()
        steps = (x_all.size(0) + cfg.batch_size - 1) // cfg.batch_size
        print(f"epoch {epoch}: loss {(epoch_loss / steps).item():.4f}")
    return model


if __name__ == "__main__":
    torch.manual_seed(0)
    run_training(TrainConfig())
