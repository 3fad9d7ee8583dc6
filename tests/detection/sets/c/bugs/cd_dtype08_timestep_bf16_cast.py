# source: https://github.com/modelscope/DiffSynth-Studio/issues/562
# area: dtype
# bug: the float timestep (e.g. 988.49) is cast to the pipeline dtype, bfloat16 on GPU, which rounds it (988.49 -> 988, 999.4 -> 1000) before the time embedding
import math
import torch
import torch.nn as nn


def sinusoidal_embedding(timestep, dim):
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, device=timestep.device, dtype=torch.float32) / half)
    args = timestep.float()[:, None] * freqs[None, :]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class TinyDiT(nn.Module):
    def __init__(self, latent_dim=32, hidden=128, freq_dim=64):
        super().__init__()
        self.freq_dim = freq_dim
        self.time_embedding = nn.Sequential(nn.Linear(freq_dim, hidden), nn.SiLU(), nn.Linear(hidden, hidden))
        self.inp = nn.Linear(latent_dim, hidden)
        self.blocks = nn.ModuleList([nn.Sequential(nn.LayerNorm(hidden), nn.Linear(hidden, hidden), nn.GELU())
                                     for _ in range(3)])
        self.out = nn.Linear(hidden, latent_dim)

    def forward(self, x, timestep):
        t_emb = sinusoidal_embedding(timestep, self.freq_dim).to(x.dtype)
        h = self.inp(x) + self.time_embedding(t_emb)
        for blk in self.blocks:
            h = h + blk(h)
        return self.out(h)


class FlowMatchScheduler:
    def __init__(self, num_train_timesteps=1000, shift=3.0):
        self.num_train_timesteps = num_train_timesteps
        self.shift = shift

    def set_timesteps(self, num_inference_steps):
        sigmas = torch.linspace(1.0, 0.0, num_inference_steps + 1)[:-1]
        sigmas = self.shift * sigmas / (1 + (self.shift - 1) * sigmas)
        self.sigmas = torch.cat([sigmas, torch.zeros(1)])
        self.timesteps = sigmas * self.num_train_timesteps

    def step(self, model_output, i, sample):
        return sample + model_output * (self.sigmas[i + 1] - self.sigmas[i])


class VideoLatentPipeline:
    def __init__(self, device, torch_dtype):
        self.device = device
        self.torch_dtype = torch_dtype
        torch.manual_seed(0)
        self.dit = TinyDiT().to(device=device, dtype=torch_dtype).eval()
        self.scheduler = FlowMatchScheduler()

    @torch.no_grad()
    def __call__(self, batch=4, num_inference_steps=30, seed=0):
        self.scheduler.set_timesteps(num_inference_steps)
        gen = torch.Generator().manual_seed(seed)
        latents = torch.randn(batch, 32, generator=gen).to(device=self.device, dtype=self.torch_dtype)
        for i, t in enumerate(self.scheduler.timesteps):
            timestep = t.unsqueeze(0).to(dtype=self.torch_dtype, device=self.device)  # expect: any
            timestep = timestep.expand(batch)
            noise_pred = self.dit(latents, timestep)
            latents = self.scheduler.step(noise_pred, i, latents)
        return latents


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch_dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    pipe = VideoLatentPipeline(device, torch_dtype)
    latents = pipe(batch=4, num_inference_steps=30)
    print(f"first timesteps: {[round(float(t), 2) for t in pipe.scheduler.timesteps[:4]]}")
    print(f"latent mean {latents.float().mean().item():.4f}  std {latents.float().std().item():.4f}")


if __name__ == "__main__":
    main()
