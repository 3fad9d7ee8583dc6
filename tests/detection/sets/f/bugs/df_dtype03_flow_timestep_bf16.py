# source: https://github.com/huggingface/diffusers/issues/9405
# area: dtype
# bug: on the GPU the pipeline runs in bfloat16 and the integer-scale timestep is cast to bfloat16 before /1000, so 750 becomes 752 (999 -> 1000) and the model is conditioned on the wrong step
import math
import torch
import torch.nn as nn


def sinusoidal_embedding(t, dim, max_period=10000.0):
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, device=t.device, dtype=torch.float32) / half)
    args = t.float()[:, None] * 1000.0 * freqs[None, :]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class TinyFlowTransformer(nn.Module):
    def __init__(self, channels=4, dim=64):
        super().__init__()
        self.dim = dim
        self.inp = nn.Linear(channels, dim)
        self.time_mlp = nn.Sequential(nn.Linear(dim, dim), nn.SiLU(), nn.Linear(dim, 2 * dim))
        self.block = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, dim))
        self.out = nn.Linear(dim, channels)

    def forward(self, latents, timestep):
        temb = sinusoidal_embedding(timestep, self.dim).to(latents.dtype)
        scale, shift = self.time_mlp(temb).chunk(2, dim=-1)
        h = self.inp(latents)
        h = h + self.block(h * (1 + scale[:, None]) + shift[:, None])
        return self.out(h)


class FlowMatchEulerScheduler:
    def __init__(self, num_train_timesteps=1000, shift=3.0):
        self.num_train_timesteps = num_train_timesteps
        self.shift = shift

    def set_timesteps(self, n, device):
        sigmas = torch.linspace(1.0, 1.0 / n, n)
        sigmas = self.shift * sigmas / (1 + (self.shift - 1) * sigmas)
        self.sigmas = torch.cat([sigmas, torch.zeros(1)]).to(device)
        self.timesteps = (sigmas * self.num_train_timesteps).to(device)

    def step(self, velocity, i, sample):
        dt = self.sigmas[i + 1] - self.sigmas[i]
        return (sample.float() + dt * velocity.float()).to(sample.dtype)


class TinyFlowPipeline:
    def __init__(self, model, scheduler, device, dtype):
        self.model = model.to(device=device, dtype=dtype).eval()
        self.scheduler = scheduler
        self.device = device
        self.dtype = dtype

    @torch.no_grad()
    def __call__(self, batch_size=2, tokens=16, steps=8, seed=0):
        g = torch.Generator().manual_seed(seed)
        latents = torch.randn(batch_size, tokens, 4, generator=g).to(self.device, self.dtype)
        self.scheduler.set_timesteps(steps, self.device)
        for i, t in enumerate(self.scheduler.timesteps):
            timestep = t.expand(latents.shape[0]).to(latents.dtype)  # expect: any
            velocity = self.model(latents, timestep / 1000)
            latents = self.scheduler.step(velocity, i, latents)
        return latents


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    torch.manual_seed(0)
    pipe = TinyFlowPipeline(TinyFlowTransformer(), FlowMatchEulerScheduler(), device, dtype)
    out = pipe(steps=8)
    print("timesteps", [round(t, 2) for t in pipe.scheduler.timesteps.tolist()])
    print("sample", tuple(out.shape), out.dtype, float(out.float().std()))


if __name__ == "__main__":
    main()
