# source: https://github.com/huggingface/diffusers/issues/4860
# area: dtype
# bug: the sinusoidal timestep embedding helper always returns float32, and it is fed straight into the fp16 denoiser's time MLP on the GPU ("mat1 and mat2 must have the same dtype")
import math

import torch
import torch.nn as nn

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
weight_dtype = torch.float16 if device.type == "cuda" else torch.float32


def timestep_embedding(timesteps, dim, max_period=10000):
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float32, device=timesteps.device) / half)
    args = timesteps[:, None].float() * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)  # expect[temb]: any


class Denoiser(nn.Module):
    def __init__(self, data_dim=8, hidden=64, t_dim=32):
        super().__init__()
        self.t_dim = t_dim
        self.time_mlp = nn.Sequential(nn.Linear(t_dim, hidden), nn.SiLU(), nn.Linear(hidden, hidden))
        self.inp = nn.Linear(data_dim, hidden)
        self.out = nn.Sequential(nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU(), nn.Linear(hidden, data_dim))

    def forward(self, x, t):
        temb = self.time_mlp(timestep_embedding(t, self.t_dim))  # expect[temb]: any
        return self.out(self.inp(x) + temb)


def make_schedule(n_steps=50):
    betas = torch.linspace(1e-4, 0.02, n_steps)
    alphas = 1.0 - betas
    return betas, alphas, torch.cumprod(alphas, dim=0)


@torch.no_grad()
def sample(model, n=16, data_dim=8, n_steps=50):
    betas, alphas, alpha_bars = (s.to(device) for s in make_schedule(n_steps))
    x = torch.randn(n, data_dim, device=device, dtype=weight_dtype)
    for i in reversed(range(n_steps)):
        t = torch.full((n,), i, device=device, dtype=torch.long)
        eps = model(x, t)
        coef = betas[i] / torch.sqrt(1.0 - alpha_bars[i])
        mean = (x - coef * eps) / torch.sqrt(alphas[i])
        noise = torch.randn_like(x) if i > 0 else torch.zeros_like(x)
        x = (mean + torch.sqrt(betas[i]) * noise).to(weight_dtype)
    return x


if __name__ == "__main__":
    model = Denoiser().to(device, dtype=weight_dtype).eval()
    samples = sample(model)
    print("sample stats:", samples.float().mean().item(), samples.float().std().item())
