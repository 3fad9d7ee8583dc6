# twin of: bugs/ba_dev08_cpu_generator_noise.py
# area: device placement
# correct: the seeded generator is created with device=device, matching the device the noise and timesteps are sampled on
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
T_STEPS = 50


def cosine_alphas_cumprod(T, s=0.008):
    t = torch.linspace(0, T, T + 1) / T
    f = torch.cos((t + s) / (1 + s) * math.pi / 2) ** 2
    return (f / f[0])[1:].clamp(1e-5, 1.0)


class Denoiser(nn.Module):
    def __init__(self, dim=2, hidden=64):
        super().__init__()
        self.t_embed = nn.Embedding(T_STEPS, hidden)
        self.inp = nn.Linear(dim, hidden)
        self.out = nn.Sequential(nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU(), nn.Linear(hidden, dim))

    def forward(self, x, t):
        return self.out(self.inp(x) + self.t_embed(t))


def q_sample(x0, t, alphas_cumprod, generator):
    noise = torch.randn(x0.shape, generator=generator, device=x0.device)
    a = alphas_cumprod[t].unsqueeze(-1)
    return a.sqrt() * x0 + (1 - a).sqrt() * noise, noise


def two_moons(n):
    theta = torch.rand(n) * math.pi
    upper = torch.rand(n) > 0.5
    x = torch.where(upper, torch.cos(theta), 1 - torch.cos(theta))
    y = torch.where(upper, torch.sin(theta), 0.5 - torch.sin(theta))
    return torch.stack([x, y], dim=1)


def main():
    gen = torch.Generator(device=device).manual_seed(1234)
    data = two_moons(1024)
    alphas_cumprod = cosine_alphas_cumprod(T_STEPS).to(device)
    model = Denoiser().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    for step in range(60):
        x0 = data[torch.randint(0, data.size(0), (128,))].to(device)
        t = torch.randint(0, T_STEPS, (x0.size(0),), generator=gen, device=device)
        xt, noise = q_sample(x0, t, alphas_cumprod, gen)
        loss = F.mse_loss(model(xt, t), noise)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 20 == 0:
            print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
