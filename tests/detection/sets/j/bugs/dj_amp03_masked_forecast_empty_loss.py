# source: https://github.com/ecmwf/WeatherGenerator/issues/356
# area: AMP
# bug: when a batch has no valid targets the loss is a fresh leaf tensor, so no parameter gets a grad and GradScaler.step on CUDA fails with "No inf checks were recorded for this optimizer"
import math
import torch
import torch.nn as nn


class ForecastConfig:
    channels = 5
    history = 6
    hidden = 64
    batch = 8
    lr = 3e-4
    steps = 6
    nan_batches = (3,)


class StationForecaster(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Linear(cfg.channels * cfg.history, cfg.hidden), nn.GELU(),
            nn.Linear(cfg.hidden, cfg.hidden), nn.GELU(),
        )
        self.head = nn.Linear(cfg.hidden, cfg.channels)

    def forward(self, x):
        return self.head(self.encoder(x.flatten(1)))


def make_batch(cfg, step, generator):
    x = torch.randn(cfg.batch, cfg.history, cfg.channels, generator=generator)
    target = x[:, -1] * 0.9 + 0.1 * torch.randn(cfg.batch, cfg.channels, generator=generator)
    if step in cfg.nan_batches:
        target = torch.full_like(target, math.nan)
    valid = ~torch.isnan(target)
    return {"x": x, "target": torch.nan_to_num(target), "mask": valid, "n_valid": int(valid.sum())}


class ForecastTrainer:
    def __init__(self, model, cfg, device):
        self.cfg = cfg
        self.device = device
        self.model = model.to(device)
        self.amp = device.type == "cuda"
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr)
        self.grad_scaler = torch.amp.GradScaler("cuda", enabled=self.amp)

    def compute_loss(self, pred, batch):
        if batch["n_valid"] == 0:
            return torch.tensor(0.0, device=self.device, requires_grad=True)  # expect: any
        mask = batch["mask"].to(self.device)
        target = batch["target"].to(self.device)
        sq = (pred.float() - target) ** 2 * mask
        return sq.sum() / mask.sum()

    def train_step(self, batch):
        self.optimizer.zero_grad(set_to_none=True)
        with torch.autocast(self.device.type, dtype=torch.float16, enabled=self.amp):
            pred = self.model(batch["x"].to(self.device))
        loss = self.compute_loss(pred, batch)
        self.grad_scaler.scale(loss).backward()
        self.grad_scaler.unscale_(self.optimizer)
        nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.grad_scaler.step(self.optimizer)
        self.grad_scaler.update()
        return loss.detach()

    def run(self):
        g = torch.Generator().manual_seed(1)
        losses = []
        for step in range(self.cfg.steps):
            losses.append(self.train_step(make_batch(self.cfg, step, g)))
        return torch.stack(losses)


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cfg = ForecastConfig()
    trainer = ForecastTrainer(StationForecaster(cfg), cfg, device)
    losses = trainer.run()
    print("losses:", [round(v, 4) for v in losses.cpu().tolist()])


if __name__ == "__main__":
    main()
