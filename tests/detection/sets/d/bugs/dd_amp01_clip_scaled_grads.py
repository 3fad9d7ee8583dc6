# source: https://github.com/NCAR/miles-credit/pull/141
# area: AMP
# bug: clip_grad_norm_ runs on the still-scaled gradients (no scaler.unscale_ first), so on a GPU with AMP the threshold is applied to grads inflated ~65536x by the loss scale and the true SGD update is shrunk to almost nothing
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


@dataclass
class TrainConfig:
    channels: int = 6
    hidden: int = 32
    grid: int = 12
    lr: float = 1e-2
    grad_max_norm: float = 1.0
    epochs: int = 2
    batch_size: int = 8
    samples: int = 32


class TinyForecastNet(nn.Module):
    """Residual conv net that predicts the next atmospheric state."""

    def __init__(self, channels, hidden):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Conv2d(channels, hidden, 3, padding=1), nn.GELU(),
            nn.Conv2d(hidden, hidden, 3, padding=1), nn.GELU(),
        )
        self.head = nn.Conv2d(hidden, channels, 1)

    def forward(self, x):
        return x + self.head(self.encoder(x))


class Trainer:
    def __init__(self, cfg, device):
        self.cfg = cfg
        self.device = device
        self.use_amp = device.type == "cuda"
        self.model = TinyForecastNet(cfg.channels, cfg.hidden).to(device)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=cfg.lr, momentum=0.9)
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.use_amp)
        self.loss_fn = nn.MSELoss()

    def train_one_epoch(self, loader):
        self.model.train()
        running = torch.zeros((), device=self.device)
        for x, y in loader:
            x = x.to(self.device)
            y = y.to(self.device)
            self.optimizer.zero_grad(set_to_none=True)
            with torch.autocast(device_type=self.device.type, dtype=torch.float16, enabled=self.use_amp):
                pred = self.model(x)
                loss = self.loss_fn(pred.float(), y)
            self.scaler.scale(loss).backward()
            if self.cfg.grad_max_norm > 0:
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.grad_max_norm)  # expect: any
            self.scaler.step(self.optimizer)
            self.scaler.update()
            running += loss.detach()
        return (running / len(loader)).item()


def make_loader(cfg):
    states = torch.randn(cfg.samples, cfg.channels, cfg.grid, cfg.grid)
    targets = states + 0.1 * torch.randn_like(states)
    ds = TensorDataset(states, targets)
    return DataLoader(ds, batch_size=cfg.batch_size, shuffle=True)


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cfg = TrainConfig()
    trainer = Trainer(cfg, device)
    loader = make_loader(cfg)
    for epoch in range(cfg.epochs):
        loss = trainer.train_one_epoch(loader)
        print(f"epoch {epoch} loss {loss:.4f}")


if __name__ == "__main__":
    main()
