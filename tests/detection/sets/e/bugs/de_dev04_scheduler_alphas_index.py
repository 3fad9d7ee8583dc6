# source: https://github.com/huggingface/diffusers/issues/9485
# area: device placement
# bug: the scheduler keeps alphas_cumprod on the CPU and indexes it with timesteps sampled on the GPU
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class CosineNoiseScheduler:
    def __init__(self, num_train_timesteps=1000, s=0.008):
        self.num_train_timesteps = num_train_timesteps
        steps = torch.arange(num_train_timesteps + 1, dtype=torch.float64) / num_train_timesteps
        f = torch.cos((steps + s) / (1 + s) * math.pi / 2) ** 2
        betas = (1 - f[1:] / f[:-1]).clamp(max=0.999).float()
        self.alphas_cumprod = torch.cumprod(1.0 - betas, dim=0)
        self.timesteps = None

    def set_timesteps(self, n, device=None):
        step = self.num_train_timesteps // n
        self.timesteps = (torch.arange(n, device=device) * step).flip(0)

    def add_noise(self, x0, noise, t):
        abar = self.alphas_cumprod[t]  # expect: any
        abar = abar.view(-1, *([1] * (x0.dim() - 1)))
        return abar.sqrt() * x0 + (1 - abar).sqrt() * noise


class TinyDenoiser(nn.Module):
    def __init__(self, ch=3, hidden=32, t_dim=16):
        super().__init__()
        self.t_dim = t_dim
        self.t_proj = nn.Linear(t_dim, hidden)
        self.inp = nn.Conv2d(ch, hidden, 3, padding=1)
        self.mid = nn.Conv2d(hidden, hidden, 3, padding=1)
        self.out = nn.Conv2d(hidden, ch, 3, padding=1)

    def time_embedding(self, t):
        half = self.t_dim // 2
        freqs = torch.exp(-math.log(10000.0) * torch.arange(half, device=t.device) / half)
        ang = t.float()[:, None] * freqs[None]
        return torch.cat([ang.sin(), ang.cos()], dim=-1)

    def forward(self, x, t):
        h = F.silu(self.inp(x)) + self.t_proj(self.time_embedding(t))[:, :, None, None]
        return self.out(F.silu(self.mid(h)))


def train(model, scheduler, images, steps=15, batch=16):
    opt = torch.optim.AdamW(model.parameters(), lr=2e-4)
    for step in range(steps):
        idx = torch.randint(0, images.size(0), (batch,))
        x0 = images[idx].to(device)
        noise = torch.randn_like(x0)
        t = torch.randint(0, scheduler.num_train_timesteps, (batch,), device=device)
        xt = scheduler.add_noise(x0, noise, t)
        loss = F.mse_loss(model(xt, t), noise)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return loss.item()


def main():
    torch.manual_seed(0)
    images = torch.rand(128, 3, 16, 16) * 2 - 1
    scheduler = CosineNoiseScheduler()
    scheduler.set_timesteps(25, device=device)
    model = TinyDenoiser().to(device)
    print("final mse", train(model, scheduler, images))


if __name__ == "__main__":
    main()
