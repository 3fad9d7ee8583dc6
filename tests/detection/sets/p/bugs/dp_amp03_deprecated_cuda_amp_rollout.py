# source: https://github.com/NVIDIA/physicsnemo/pull/1946
# area: AMP
# bug: the trainer still uses the deprecated torch.cuda.amp.autocast / torch.cuda.amp.GradScaler entry points (FutureWarning on every call in torch>=2.4, slated for removal) instead of torch.amp with an explicit device_type
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.cuda.amp import GradScaler, autocast

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


@dataclass
class RolloutConfig:
    n_lat: int = 16
    n_lon: int = 32
    n_vars: int = 4
    hidden: int = 64
    rollout_steps: int = 3
    batch_size: int = 4
    iters: int = 5
    lr: float = 1e-3
    amp: bool = device.type == "cuda"
    amp_dtype: torch.dtype = torch.float16


class GridProcessor(nn.Module):
    """Small conv 'processor' that advances the atmospheric state by one time step."""

    def __init__(self, cfg):
        super().__init__()
        c = cfg.n_vars
        self.encoder = nn.Conv2d(c, cfg.hidden, 3, padding=1, padding_mode="circular")
        self.mixer = nn.Sequential(
            nn.Conv2d(cfg.hidden, cfg.hidden, 3, padding=1, padding_mode="circular"), nn.SiLU(),
            nn.Conv2d(cfg.hidden, cfg.hidden, 3, padding=1, padding_mode="circular"), nn.SiLU(),
        )
        self.decoder = nn.Conv2d(cfg.hidden, c, 1)

    def forward(self, state):
        h = self.encoder(state)
        return state + self.decoder(self.mixer(h))


class RolloutTrainer:
    def __init__(self, cfg):
        self.cfg = cfg
        self.model = GridProcessor(cfg).to(device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=cfg.lr)
        self.scaler = GradScaler(enabled=cfg.amp)  # expect[w]: any
        lat = torch.linspace(-torch.pi / 2, torch.pi / 2, cfg.n_lat, device=device)
        self.area_weight = torch.cos(lat).clamp_min(1e-3).view(1, 1, -1, 1)

    def rollout(self, init_state, n_steps):
        preds = []
        state = init_state
        with autocast(enabled=self.cfg.amp, dtype=self.cfg.amp_dtype):  # expect[w]: any
            for _ in range(n_steps):
                state = self.model(state)
                preds.append(state)
        return torch.stack(preds, dim=1)

    def train_step(self, init_state, targets):
        self.optimizer.zero_grad(set_to_none=True)
        preds = self.rollout(init_state, targets.shape[1])
        err = (preds.float() - targets) ** 2
        loss = (err * self.area_weight.unsqueeze(1)).mean()
        self.scaler.scale(loss).backward()
        self.scaler.step(self.optimizer)
        self.scaler.update()
        return loss.detach()


def synthetic_era_batch(cfg, gen):
    shape = (cfg.batch_size, cfg.n_vars, cfg.n_lat, cfg.n_lon)
    init = torch.randn(shape, generator=gen)
    steps = [init]
    for _ in range(cfg.rollout_steps):
        steps.append(torch.roll(steps[-1], shifts=1, dims=-1) * 0.98)
    return init.to(device), torch.stack(steps[1:], dim=1).to(device)


if __name__ == "__main__":
    cfg = RolloutConfig()
    trainer = RolloutTrainer(cfg)
    gen = torch.Generator().manual_seed(0)
    losses = [trainer.train_step(*synthetic_era_batch(cfg, gen)) for _ in range(cfg.iters)]
    print("rollout loss per iter:", [round(v, 4) for v in torch.stack(losses).tolist()])
