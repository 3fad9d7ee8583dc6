# twin of: bugs/di_sync03_traj_loss_weights.py
# area: transfer & sync
# correct: the constant weights are a registered buffer, moved to the GPU once with the module, so no host-to-device copy happens per step
import torch
import torch.nn as nn
from dataclasses import dataclass, field
from typing import List


@dataclass
class PlannerConfig:
    history_len: int = 10
    future_len: int = 12
    feat_dim: int = 7
    hidden: int = 128
    batch_size: int = 32
    steps: int = 12
    lr: float = 1e-3
    coord_weights: List[float] = field(default_factory=lambda: [1.0, 1.0, 0.5])


class TrajectoryPlanner(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.future_len = cfg.future_len
        self.encoder = nn.GRU(cfg.feat_dim, cfg.hidden, batch_first=True)
        self.decoder = nn.Sequential(
            nn.Linear(cfg.hidden, cfg.hidden), nn.ReLU(),
            nn.Linear(cfg.hidden, cfg.future_len * 3),
        )

    def forward(self, history):
        _, h = self.encoder(history)
        out = self.decoder(h[-1])
        return out.view(-1, self.future_len, 3)


class WeightedAvailabilityLoss(nn.Module):
    def __init__(self, coord_weights):
        super().__init__()
        self.register_buffer("coord_weights", torch.tensor(coord_weights), persistent=False)

    def forward(self, pred, target, availability):
        mask = availability.unsqueeze(-1) * self.coord_weights
        err = (pred - target) ** 2 * mask
        return err.sum() / mask.sum().clamp_min(1.0)


def synthetic_batch(cfg, device):
    hist = torch.randn(cfg.batch_size, cfg.history_len, cfg.feat_dim, device=device)
    target = torch.cumsum(torch.randn(cfg.batch_size, cfg.future_len, 3, device=device) * 0.1, dim=1)
    avail = (torch.rand(cfg.batch_size, cfg.future_len, device=device) > 0.1).float()
    return hist, target, avail


def train(cfg):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = TrajectoryPlanner(cfg).to(device)
    criterion = WeightedAvailabilityLoss(cfg.coord_weights).to(device)
    optim = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    epoch_loss = torch.zeros((), device=device)
    for step in range(cfg.steps):
        hist, target, avail = synthetic_batch(cfg, device)
        pred = model(hist)
        loss = criterion(pred, target, avail)
        optim.zero_grad()
        loss.backward()
        optim.step()
        epoch_loss += loss.detach()
    print(f"avg displacement loss: {(epoch_loss / cfg.steps).item():.4f}")


if __name__ == "__main__":
    train(PlannerConfig())
