# source: https://github.com/pytorch/torchtitan/pull/2363
# area: dtype
# bug: on the GPU the step runs under fp16 autocast but the loss is back-propagated unscaled (no GradScaler), so small fp16 gradients underflow to zero
import torch
import torch.nn as nn
import torch.nn.functional as F
from dataclasses import dataclass


@dataclass
class DenoiserConfig:
    dim: int = 32
    hidden: int = 128
    steps: int = 30
    batch_size: int = 64
    lr: float = 2e-4
    noise_scale: float = 0.02
    amp: bool = True


class ResidualDenoiser(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(cfg.dim + 1, cfg.hidden), nn.SiLU(),
            nn.Linear(cfg.hidden, cfg.hidden), nn.SiLU(),
            nn.Linear(cfg.hidden, cfg.dim),
        )

    def forward(self, x_noisy, sigma):
        return self.net(torch.cat([x_noisy, sigma[:, None]], dim=1))


class DenoiserTrainer:
    def __init__(self, cfg, device):
        self.cfg = cfg
        self.device = device
        self.model = ResidualDenoiser(cfg).to(device)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr)
        self.use_amp = cfg.amp and device.type == "cuda"

    def sample_batch(self):
        clean = torch.randn(self.cfg.batch_size, self.cfg.dim, device=self.device)
        sigma = torch.rand(self.cfg.batch_size, device=self.device) * self.cfg.noise_scale
        noise = torch.randn_like(clean) * sigma[:, None]
        return clean + noise, sigma, noise

    def train_step(self):
        x_noisy, sigma, noise = self.sample_batch()
        with torch.autocast(device_type=self.device.type, dtype=torch.float16, enabled=self.use_amp):  # expect[w]: any
            pred = self.model(x_noisy, sigma)
            loss = F.mse_loss(pred.float(), noise)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()  # expect[w]: any
        self.opt.step()
        return loss.detach()

    def fit(self):
        history = torch.zeros(self.cfg.steps, device=self.device)
        for step in range(self.cfg.steps):
            history[step] = self.train_step()
        return history


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    trainer = DenoiserTrainer(DenoiserConfig(), device)
    history = trainer.fit().cpu()
    print(f"loss first {history[:10].mean():.3e} last {history[-10:].mean():.3e}")


if __name__ == "__main__":
    main()
