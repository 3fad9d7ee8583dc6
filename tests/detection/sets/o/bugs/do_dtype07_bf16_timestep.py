# source: https://github.com/Tencent-Hunyuan/UniRL/pull/438
# area: dtype
# bug: sigma is cast to the bf16 compute dtype used on CUDA before being scaled to [0, 1000], so timesteps like 978.26 reach the time embedding as 976 and the GPU samples a different trajectory
import math

import torch
import torch.nn as nn


def timestep_embedding(t, dim, max_period=10000.0):
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, device=t.device, dtype=torch.float32) / half)
    args = t.float()[:, None] * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class TinyDiT(nn.Module):
    def __init__(self, channels=4, patch=2, dim=96, depth=2, heads=4):
        super().__init__()
        self.patch = patch
        self.embed = nn.Conv2d(channels, dim, patch, stride=patch)
        self.time_mlp = nn.Sequential(nn.Linear(dim, dim), nn.SiLU(), nn.Linear(dim, 2 * dim))
        layer = nn.TransformerEncoderLayer(dim, heads, 2 * dim, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.out = nn.Linear(dim, channels * patch * patch)
        self.dim = dim

    def forward(self, x, timestep):
        b, c, h, w = x.shape
        tokens = self.embed(x).flatten(2).transpose(1, 2)
        temb = timestep_embedding(timestep, self.dim).to(tokens.dtype)
        scale, shift = self.time_mlp(temb).unsqueeze(1).chunk(2, dim=-1)
        tokens = self.blocks(tokens * (1 + scale) + shift)
        out = self.out(tokens).transpose(1, 2).reshape(b, c * self.patch * self.patch, -1)
        return nn.functional.fold(out, (h, w), self.patch, stride=self.patch)


class FlowMatchSampler:
    TIMESTEP_SCALE = 1000.0

    def __init__(self, num_steps=10, shift=5.0):
        sigmas = torch.linspace(1.0, 0.0, num_steps + 1, dtype=torch.float64)
        sigmas = shift * sigmas / (1 + (shift - 1) * sigmas)
        self.sigmas = sigmas.float()
        self.deltas = (sigmas[1:] - sigmas[:-1]).tolist()

    def predict_velocity(self, model, latents, sigma):
        timestep = sigma.to(device=latents.device, dtype=latents.dtype) * self.TIMESTEP_SCALE  # expect: any
        return model(latents, timestep.expand(latents.shape[0]))

    @torch.no_grad()
    def sample(self, model, noise):
        latents = noise
        for sigma, delta in zip(self.sigmas[:-1], self.deltas):
            velocity = self.predict_velocity(model, latents, sigma)
            latents = latents + delta * velocity
        return latents


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    torch.manual_seed(0)
    model = TinyDiT().to(device=device, dtype=dtype).eval()
    sampler = FlowMatchSampler(num_steps=10)
    noise = torch.randn(2, 4, 16, 16, device=device, dtype=dtype)
    latents = sampler.sample(model, noise)
    print("timesteps:", [round(s * 1000, 2) for s in sampler.sigmas[:-1].tolist()])
    print("latent std:", latents.float().std().item())


if __name__ == "__main__":
    main()
