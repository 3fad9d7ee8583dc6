# source: https://github.com/pytorch/pytorch/issues/3879
# area: device placement
# bug: the inverse-frequency class weights handed to CrossEntropyLoss are built on the CPU and never moved, while logits and targets are on the GPU
from dataclasses import dataclass, field

import torch
import torch.nn as nn


@dataclass
class TrainerConfig:
    num_classes: int = 5
    in_features: int = 20
    batch_size: int = 64
    epochs: int = 2
    lr: float = 1e-2
    device: str = field(default_factory=lambda: "cuda" if torch.cuda.is_available() else "cpu")


def make_imbalanced_data(cfg, n=1200, seed=0):
    g = torch.Generator().manual_seed(seed)
    probs = torch.tensor([0.55, 0.2, 0.12, 0.08, 0.05])
    y = torch.multinomial(probs, n, replacement=True, generator=g)
    centers = torch.randn(cfg.num_classes, cfg.in_features, generator=g) * 2.0
    x = centers[y] + torch.randn(n, cfg.in_features, generator=g)
    return x, y


def inverse_frequency_weights(labels, num_classes):
    counts = torch.bincount(labels, minlength=num_classes).float()
    weights = counts.sum() / (num_classes * counts.clamp(min=1.0))
    return weights / weights.mean()


class ImbalancedTrainer:
    def __init__(self, cfg: TrainerConfig, train_x, train_y):
        self.cfg = cfg
        self.device = torch.device(cfg.device)
        self.model = nn.Sequential(
            nn.Linear(cfg.in_features, 64), nn.ReLU(), nn.Linear(64, cfg.num_classes)
        ).to(self.device)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=cfg.lr, momentum=0.9)
        class_weights = inverse_frequency_weights(train_y, cfg.num_classes)
        self.criterion = nn.CrossEntropyLoss(weight=class_weights)  # expect: any
        self.loader = torch.utils.data.DataLoader(
            torch.utils.data.TensorDataset(train_x, train_y),
            batch_size=cfg.batch_size, shuffle=True,
        )

    def train_epoch(self):
        self.model.train()
        total = torch.zeros((), device=self.device)
        for xb, yb in self.loader:
            xb, yb = xb.to(self.device), yb.to(self.device)
            loss = self.criterion(self.model(xb), yb)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            total += loss.detach()
        return total / len(self.loader)

    @torch.no_grad()
    def balanced_accuracy(self, x, y):
        self.model.eval()
        pred = self.model(x.to(self.device)).argmax(dim=1)
        y = y.to(self.device)
        hits = (pred == y).float()
        counts = torch.zeros(self.cfg.num_classes, device=self.device).index_add_(0, y, torch.ones_like(hits))
        correct = torch.zeros(self.cfg.num_classes, device=self.device).index_add_(0, y, hits)
        return (correct / counts).nanmean()

    def fit(self, val_x, val_y):
        for epoch in range(self.cfg.epochs):
            loss = self.train_epoch()
            bacc = self.balanced_accuracy(val_x, val_y)
            print(f"epoch {epoch}: loss={loss.item():.3f} balanced_acc={bacc.item():.3f}")


if __name__ == "__main__":
    torch.manual_seed(0)
    cfg = TrainerConfig()
    x, y = make_imbalanced_data(cfg)
    trainer = ImbalancedTrainer(cfg, x[:1000], y[:1000])
    trainer.fit(x[1000:], y[1000:])
