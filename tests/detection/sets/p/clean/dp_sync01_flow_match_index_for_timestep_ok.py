# twin of: bugs/dp_sync01_flow_match_index_for_timestep.py
# area: transfer & sync
# correct: timestep indices are found for the whole batch with one on-device comparison, so no host sync per sample
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class FlowConfig:
    num_train_timesteps: int = 1000
    shift: float = 3.0
    latent_dim: int = 16
    hidden: int = 64
    batch_size: int = 32
    steps: int = 12
    lr: float = 2e-3


class FlowMatchEulerScheduler:
    def __init__(self, cfg, device):
        t = torch.linspace(1.0, 1.0 / cfg.num_train_timesteps, cfg.num_train_timesteps)
        sigmas = cfg.shift * t / (1 + (cfg.shift - 1) * t)
        self.sigmas = sigmas.to(device)
        self.timesteps = (sigmas * cfg.num_train_timesteps).to(device)

    def index_for_timestep(self, timestep):
        matches = self.timesteps[None, :] == timestep[:, None]
        return matches.int().argmax(dim=1)

    def scale_noise(self, sample, timestep, noise):
        step_indices = self.index_for_timestep(timestep)
        sigma = self.sigmas[step_indices].flatten()
        while sigma.ndim < sample.ndim:
            sigma = sigma.unsqueeze(-1)
        return sigma * noise + (1.0 - sigma) * sample


class VelocityNet(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.t_proj = nn.Linear(16, cfg.hidden)
        self.body = nn.Sequential(
            nn.Linear(cfg.latent_dim + cfg.hidden, cfg.hidden), nn.SiLU(),
            nn.Linear(cfg.hidden, cfg.hidden), nn.SiLU(),
            nn.Linear(cfg.hidden, cfg.latent_dim),
        )

    def timestep_embedding(self, t):
        half = 8
        freqs = torch.exp(-math.log(10000.0) * torch.arange(half, device=t.device) / half)
        args = t[:, None].float() * freqs[None]
        return torch.cat([args.sin(), args.cos()], dim=-1)

    def forward(self, x, t):
        emb = F.silu(self.t_proj(self.timestep_embedding(t)))
        return self.body(torch.cat([x, emb], dim=-1))


def sample_clean_latents(centers, n):
    which = torch.randint(0, centers.shape[0], (n,), device=centers.device)
    return centers[which] + 0.3 * torch.randn(n, centers.shape[1], device=centers.device)


def train(cfg):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    scheduler = FlowMatchEulerScheduler(cfg, device)
    model = VelocityNet(cfg).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    centers = torch.stack([torch.full((cfg.latent_dim,), 2.0), torch.full((cfg.latent_dim,), -2.0)]).to(device)
    running = torch.zeros((), device=device)
    for step in range(cfg.steps):
        x0 = sample_clean_latents(centers, cfg.batch_size)
        noise = torch.randn_like(x0)
        idx = torch.randint(0, cfg.num_train_timesteps, (cfg.batch_size,), device=device)
        timesteps = scheduler.timesteps[idx]
        noisy = scheduler.scale_noise(x0, timesteps, noise)
        pred = model(noisy, timesteps)
        loss = F.mse_loss(pred, noise - x0)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        running += loss.detach()
    return (running / cfg.steps).item()


if __name__ == "__main__":
    torch.manual_seed(0)
    print(f"mean flow-matching loss: {train(FlowConfig()):.4f}")
