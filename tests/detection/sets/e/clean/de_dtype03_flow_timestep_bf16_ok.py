# twin of: bugs/de_dtype03_flow_timestep_bf16.py
# area: dtype
# correct: the timestep stays float32 until after the sinusoidal embedding, which is the only tensor cast to the bfloat16 compute dtype
import math
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
compute_dtype = torch.bfloat16 if device.type == "cuda" else torch.float32


def sinusoidal_embedding(t, dim):
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, device=t.device, dtype=torch.float32) / half)
    args = t.float().unsqueeze(-1) * freqs
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class FlowMatchScheduler:
    def __init__(self, num_steps=20, shift=3.0):
        sigmas = torch.linspace(1.0, 0.0, num_steps + 1)[:-1]
        self.sigmas = shift * sigmas / (1 + (shift - 1) * sigmas)
        self.timesteps = self.sigmas * 1000.0

    def step(self, velocity, idx, latents):
        sigma = self.sigmas[idx]
        sigma_next = self.sigmas[idx + 1] if idx + 1 < len(self.sigmas) else torch.tensor(0.0)
        return latents + velocity * float(sigma_next - sigma)


class TinyDiT(nn.Module):
    def __init__(self, channels=8, dim=64, freq_dim=32):
        super().__init__()
        self.freq_dim = freq_dim
        self.time_embedding = nn.Sequential(nn.Linear(freq_dim, dim), nn.SiLU(), nn.Linear(dim, dim))
        self.proj_in = nn.Linear(channels, dim)
        self.block = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, dim))
        self.proj_out = nn.Linear(dim, channels)

    def forward(self, x, timestep):
        emb = sinusoidal_embedding(timestep, self.freq_dim).to(x.dtype)
        t = self.time_embedding(emb)
        h = self.proj_in(x) + t.unsqueeze(1)
        h = h + self.block(h)
        return self.proj_out(h)


class VideoPipeline:
    def __init__(self, model, scheduler, torch_dtype, device):
        self.model = model.to(device=device, dtype=torch_dtype).eval()
        self.scheduler = scheduler
        self.torch_dtype = torch_dtype
        self.device = device

    @torch.no_grad()
    def __call__(self, batch=2, tokens=64, channels=8, seed=0):
        g = torch.Generator().manual_seed(seed)
        latents = torch.randn(batch, tokens, channels, generator=g).to(self.device, self.torch_dtype)
        for idx, t in enumerate(self.scheduler.timesteps):
            timestep = t.unsqueeze(0).to(dtype=torch.float32, device=self.device)
            velocity = self.model(latents, timestep)
            latents = self.scheduler.step(velocity, idx, latents)
        return latents.float()


if __name__ == "__main__":
    torch.manual_seed(0)
    pipe = VideoPipeline(TinyDiT(), FlowMatchScheduler(), compute_dtype, device)
    out = pipe()
    print("latents", tuple(out.shape), "std", round(out.std().item(), 4))
