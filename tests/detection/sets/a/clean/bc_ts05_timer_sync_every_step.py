# twin of: bugs/bc_ts05_timer_sync_every_step.py
# area: transfer & sync
# correct: the timer (and its torch.cuda.synchronize) only runs on logging steps, so the sync is intentional and rare
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class StepTimer:
    """Measures wall time between ticks; syncs CUDA so the numbers are honest."""

    def __init__(self, device):
        self.device = device
        self.last = time.perf_counter()
        self.samples = []

    def tick(self, n_steps=1):
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        now = time.perf_counter()
        self.samples.append((now - self.last) / n_steps)
        self.last = now


class PointMLP(nn.Module):
    def __init__(self, d=3, hidden=64, n_cls=6):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(d, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, n_cls)

    def forward(self, pts):
        feat = self.mlp(pts).max(dim=1).values
        return self.head(feat)


def train(model, loader, epochs=2, log_every=10):
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    timer = StepTimer(device)
    step = 0
    for epoch in range(epochs):
        for pts, labels in loader:
            pts, labels = pts.to(device), labels.to(device)
            loss = nn.functional.cross_entropy(model(pts), labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            if step % log_every == 0:
                timer.tick(log_every)
                dt = timer.samples[-1]
                print(f"step {step}: loss {loss.item():.3f}, {1.0 / dt:.1f} it/s")


if __name__ == "__main__":
    pts = torch.randn(320, 64, 3)
    labels = (pts[:, :, 0].mean(1) > 0).long() + 2 * (pts[:, :, 1].mean(1) > 0).long()
    loader = DataLoader(TensorDataset(pts, labels), batch_size=16, shuffle=True)
    train(PointMLP().to(device), loader)
