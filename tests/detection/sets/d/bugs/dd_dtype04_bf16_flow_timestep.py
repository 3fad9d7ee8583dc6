# source: https://github.com/kohya-ss/musubi-tuner/pull/729
# area: dtype
# bug: the sampler casts the 0-1000 timestep to bfloat16 before the sinusoidal embedding, so on the GPU (bf16 path) timesteps are silently rounded (998.4 -> 1000) and the denoiser sees the wrong step
import math

import torch
import torch.nn as nn


def sinusoidal_embedding(t, dim, max_period=10000.0):
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, device=t.device, dtype=torch.float32) / half)
    args = t.float()[:, None] * freqs[None, :]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class TinyVelocityNet(nn.Module):
    def __init__(self, channels=4, hidden=64, t_dim=32):
        super().__init__()
        self.t_dim = t_dim
        self.time_mlp = nn.Sequential(nn.Linear(t_dim, hidden), nn.SiLU(), nn.Linear(hidden, hidden))
        self.inp = nn.Conv2d(channels, hidden, 3, padding=1)
        self.out = nn.Conv2d(hidden, channels, 3, padding=1)

    def forward(self, x, timestep):
        temb = sinusoidal_embedding(timestep, self.t_dim).to(x.dtype)
        h = self.inp(x) + self.time_mlp(temb)[:, :, None, None]
        return self.out(torch.nn.functional.silu(h))


class FlowMatchSampler:
    def __init__(self, num_steps=12, shift=3.0, num_train_timesteps=1000):
        sigmas = torch.linspace(1.0, 1.0 / num_steps, num_steps)
        self.sigmas = shift * sigmas / (1 + (shift - 1) * sigmas)
        self.sigmas = torch.cat([self.sigmas, torch.zeros(1)])
        self.timesteps = self.sigmas[:-1] * num_train_timesteps


class Pipeline:
    def __init__(self, model, device, dtype):
        self.model = model
        self.device = device
        self.dtype = dtype

    @torch.no_grad()
    def __call__(self, batch, size, sampler, generator):
        latents = torch.randn(batch, 4, size, size, generator=generator).to(self.device, self.dtype)
        seen = []
        steps = (sampler.sigmas[1:] - sampler.sigmas[:-1]).tolist()
        for t, dt in zip(sampler.timesteps, steps):
            timestep = t.expand(batch).to(device=self.device, dtype=self.dtype)  # expect: any
            seen.append(timestep[0].float())
            velocity = self.model(latents, timestep)
            latents = latents + dt * velocity
        return latents, torch.stack(seen)


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    model = TinyVelocityNet().to(device=device, dtype=dtype).eval()
    sampler = FlowMatchSampler()
    pipe = Pipeline(model, device, dtype)
    gen = torch.Generator().manual_seed(42)
    latents, seen = pipe(2, 16, sampler, gen)
    drift = (seen.cpu() - sampler.timesteps).abs().max()
    print(f"latent std {latents.float().std().item():.4f}, max timestep drift {drift.item():.3f}")


if __name__ == "__main__":
    main()
