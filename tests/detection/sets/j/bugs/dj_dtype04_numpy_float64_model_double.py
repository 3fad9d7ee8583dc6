# source: https://runebook.dev/zh/docs/pytorch/generated/torch.nn.module/torch.nn.Module.double
# area: dtype
# bug: NumPy float64 sensor windows are kept as float64 and the model is cast with .double() to match, so every GPU kernel runs in slow fp64
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class TrainConfig:
    window = 64
    channels = 6
    batch_size = 32
    epochs = 2
    lr = 3e-3


def synth_cycles(n, cfg, seed=0):
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, cfg.window)
    fade = rng.uniform(0.7, 1.0, size=n)
    base = np.sin(2 * np.pi * rng.uniform(1, 3, size=(n, cfg.channels, 1)) * t)
    signals = base * fade[:, None, None] + 0.05 * rng.standard_normal((n, cfg.channels, cfg.window))
    return signals, fade


class BatteryCycleDataset(Dataset):
    def __init__(self, signals, targets):
        self.signals = signals
        self.targets = targets

    def __len__(self):
        return len(self.signals)

    def __getitem__(self, i):
        x = torch.from_numpy(self.signals[i])  # expect[w]: any
        y = torch.tensor(self.targets[i])
        return x, y


class HealthRegressor(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv1d(cfg.channels, 32, 5, padding=2), nn.ReLU(),
            nn.Conv1d(32, 32, 5, padding=2), nn.ReLU(),
            nn.AdaptiveAvgPool1d(1),
        )
        self.head = nn.Linear(32, 1)

    def forward(self, x):
        return self.head(self.conv(x).flatten(1)).squeeze(1)


def fit(cfg):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    signals, fade = synth_cycles(160, cfg)
    loader = DataLoader(BatteryCycleDataset(signals, fade), batch_size=cfg.batch_size, shuffle=True)

    model = HealthRegressor(cfg).to(device)
    model = model.double()  # expect[w]: any
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    loss_fn = nn.MSELoss()

    for epoch in range(cfg.epochs):
        total = torch.zeros((), device=device)
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            loss = loss_fn(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += loss.detach() * x.size(0)
        print(f"epoch {epoch}: mse {(total / len(loader.dataset)).item():.5f}")
    return model


if __name__ == "__main__":
    fit(TrainConfig())
