# source: https://github.com/modelscope/modelscope/issues/220
# area: device placement
# bug: the noise schedule stays a CPU tensor while timesteps are drawn on the GPU, so schedule[t] indexes a CPU tensor with CUDA indices and fails
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def _i(tensor, t, x):
    shape = (x.size(0),) + (1,) * (x.ndim - 1)
    return tensor[t].view(shape).to(x)  # expect: any


def beta_schedule(kind, num_timesteps):
    if kind == "linear":
        scale = 1000.0 / num_timesteps
        return torch.linspace(scale * 1e-4, scale * 2e-2, num_timesteps, dtype=torch.float64)
    if kind == "cosine":
        steps = torch.arange(num_timesteps + 1, dtype=torch.float64) / num_timesteps
        alphas_bar = torch.cos((steps + 0.008) / 1.008 * math.pi / 2) ** 2
        betas = 1 - alphas_bar[1:] / alphas_bar[:-1]
        return betas.clamp(max=0.999)
    raise ValueError(f"unknown schedule {kind}")


class GaussianDiffusion:
    def __init__(self, betas):
        self.betas = betas
        self.num_timesteps = len(betas)
        alphas = 1.0 - betas
        self.alphas_cumprod = torch.cumprod(alphas, dim=0)
        self.sqrt_alphas_cumprod = torch.sqrt(self.alphas_cumprod)
        self.sqrt_one_minus_alphas_cumprod = torch.sqrt(1.0 - self.alphas_cumprod)

    def q_sample(self, x0, t, noise):
        return (_i(self.sqrt_alphas_cumprod, t, x0) * x0
                + _i(self.sqrt_one_minus_alphas_cumprod, t, x0) * noise)

    def loss(self, x0, t, model):
        noise = torch.randn_like(x0)
        xt = self.q_sample(x0, t, noise)
        return F.mse_loss(model(xt, t), noise)


def timestep_embedding(t, dim):
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, device=t.device, dtype=torch.float32) / half)
    args = t.float()[:, None] * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class TinyUNet(nn.Module):
    def __init__(self, channels=1, hidden=32, emb_dim=64):
        super().__init__()
        self.emb_dim = emb_dim
        self.time_mlp = nn.Sequential(nn.Linear(emb_dim, hidden), nn.SiLU(), nn.Linear(hidden, hidden))
        self.inp = nn.Conv2d(channels, hidden, 3, padding=1)
        self.mid = nn.Conv2d(hidden, hidden, 3, padding=1)
        self.out = nn.Conv2d(hidden, channels, 3, padding=1)

    def forward(self, x, t):
        h = F.silu(self.inp(x))
        h = h + self.time_mlp(timestep_embedding(t, self.emb_dim))[:, :, None, None]
        h = F.silu(self.mid(h))
        return self.out(h)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    num_timesteps = 1000
    diffusion = GaussianDiffusion(beta_schedule("linear", num_timesteps))
    model = TinyUNet().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-4)

    data = torch.rand(64, 1, 16, 16) * 2 - 1
    loader = torch.utils.data.DataLoader(data, batch_size=16, shuffle=True)

    running = torch.zeros((), device=device)
    for epoch in range(2):
        for x0 in loader:
            x0 = x0.to(device)
            t = torch.randint(0, diffusion.num_timesteps, (x0.size(0),), device=device)
            loss = diffusion.loss(x0, t, model)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            running += loss.detach()
    print(f"mean loss {running.item() / (2 * len(loader)):.4f}")


if __name__ == "__main__":
    main()
