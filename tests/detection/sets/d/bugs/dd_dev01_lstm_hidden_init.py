# source: https://github.com/pytorch/pytorch/issues/52186
# area: device placement
# bug: the initial LSTM hidden/cell states are created in forward() without device=, so they stay on the CPU while the input and weights are on the GPU
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


@dataclass
class ForecastConfig:
    window: int = 24
    horizon: int = 1
    hidden_size: int = 32
    num_layers: int = 2
    batch_size: int = 32
    epochs: int = 2
    lr: float = 1e-3


def make_sine_series(n_points=400, noise=0.05, seed=0):
    g = torch.Generator().manual_seed(seed)
    t = torch.arange(n_points, dtype=torch.float32)
    series = torch.sin(2 * math.pi * t / 50.0) + 0.5 * torch.sin(2 * math.pi * t / 13.0)
    return series + noise * torch.randn(n_points, generator=g)


def windowize(series, window, horizon):
    xs, ys = [], []
    for start in range(len(series) - window - horizon):
        xs.append(series[start:start + window])
        ys.append(series[start + window:start + window + horizon])
    return torch.stack(xs).unsqueeze(-1), torch.stack(ys)


class LSTMForecaster(nn.Module):
    def __init__(self, cfg: ForecastConfig):
        super().__init__()
        self.num_layers = cfg.num_layers
        self.hidden_size = cfg.hidden_size
        self.lstm = nn.LSTM(1, cfg.hidden_size, cfg.num_layers, batch_first=True)
        self.head = nn.Linear(cfg.hidden_size, cfg.horizon)

    def forward(self, x):
        h0 = torch.zeros(self.num_layers, x.size(0), self.hidden_size)  # expect[init]: any
        c0 = torch.zeros(self.num_layers, x.size(0), self.hidden_size)  # expect[init]: any
        out, _ = self.lstm(x, (h0, c0))
        return self.head(out[:, -1, :])


def train(cfg: ForecastConfig, device):
    series = make_sine_series()
    x, y = windowize(series, cfg.window, cfg.horizon)
    loader = DataLoader(TensorDataset(x, y), batch_size=cfg.batch_size, shuffle=True)

    model = LSTMForecaster(cfg).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    criterion = nn.MSELoss()

    for epoch in range(cfg.epochs):
        model.train()
        running = torch.zeros((), device=device)
        for xb, yb in loader:
            xb, yb = xb.to(device), yb.to(device)
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
            running += loss.detach() * xb.size(0)
        print(f"epoch {epoch}: mse={(running / len(loader.dataset)).item():.4f}")
    return model


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    train(ForecastConfig(), device)
