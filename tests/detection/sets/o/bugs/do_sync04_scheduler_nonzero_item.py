# source: https://github.com/huggingface/diffusers/issues/3950
# area: transfer & sync
# bug: the scheduler finds the step index with (timesteps == t).nonzero().item() on a CUDA tensor twice per denoising step, a data-dependent-shape op plus a host sync every step
import math
import torch
import torch.nn as nn


class EulerAncestralScheduler:
    def __init__(self, num_train_timesteps=1000, beta_start=0.00085, beta_end=0.012):
        betas = torch.linspace(beta_start ** 0.5, beta_end ** 0.5, num_train_timesteps) ** 2
        self.alphas_cumprod = torch.cumprod(1.0 - betas, dim=0)
        self.num_train_timesteps = num_train_timesteps
        self.init_noise_sigma = 1.0

    def set_timesteps(self, num_inference_steps, device):
        ts = torch.linspace(0, self.num_train_timesteps - 1, num_inference_steps).flip(0)
        sigmas = ((1 - self.alphas_cumprod) / self.alphas_cumprod) ** 0.5
        sigmas = torch.cat([sigmas[ts.long()], torch.zeros(1)])
        self.init_noise_sigma = float(sigmas.max())
        self.sigmas = sigmas.to(device)
        self.timesteps = ts.to(device)

    def _index_for_timestep(self, timestep):
        return (self.timesteps == timestep).nonzero().item()  # expect: any

    def scale_model_input(self, sample, timestep):
        sigma = self.sigmas[self._index_for_timestep(timestep)]
        return sample / (sigma ** 2 + 1) ** 0.5

    def step(self, model_output, timestep, sample, generator=None):
        i = self._index_for_timestep(timestep)
        sigma_from, sigma_to = self.sigmas[i], self.sigmas[i + 1]
        pred_original = sample - sigma_from * model_output
        sigma_up = (sigma_to ** 2 * (sigma_from ** 2 - sigma_to ** 2) / sigma_from ** 2) ** 0.5
        sigma_down = (sigma_to ** 2 - sigma_up ** 2) ** 0.5
        derivative = (sample - pred_original) / sigma_from
        prev = sample + derivative * (sigma_down - sigma_from)
        noise = torch.randn(sample.shape, generator=generator, device=sample.device, dtype=sample.dtype)
        return prev + noise * sigma_up


class TinyDenoiser(nn.Module):
    def __init__(self, ch=4, hidden=32, temb=32):
        super().__init__()
        self.temb_dim = temb
        self.time_mlp = nn.Sequential(nn.Linear(temb, hidden), nn.SiLU(), nn.Linear(hidden, hidden))
        self.inp = nn.Conv2d(ch, hidden, 3, padding=1)
        self.mid = nn.Conv2d(hidden, hidden, 3, padding=1)
        self.out = nn.Conv2d(hidden, ch, 3, padding=1)

    def timestep_embedding(self, t, batch):
        half = self.temb_dim // 2
        freqs = torch.exp(-math.log(10000.0) * torch.arange(half, device=t.device) / half)
        args = t.float().reshape(-1, 1) * freqs[None]
        return torch.cat([args.sin(), args.cos()], dim=-1).expand(batch, -1)

    def forward(self, x, t):
        emb = self.time_mlp(self.timestep_embedding(t, x.shape[0]))
        h = torch.nn.functional.silu(self.inp(x)) + emb[:, :, None, None]
        h = torch.nn.functional.silu(self.mid(h))
        return self.out(h)


class LatentPipeline:
    def __init__(self, denoiser, scheduler, device):
        self.denoiser = denoiser.to(device).eval()
        self.scheduler = scheduler
        self.device = device

    @torch.no_grad()
    def __call__(self, batch=2, size=32, steps=20, seed=0):
        gen = torch.Generator(device=self.device).manual_seed(seed)
        self.scheduler.set_timesteps(steps, self.device)
        latents = torch.randn((batch, 4, size, size), generator=gen, device=self.device)
        latents = latents * self.scheduler.init_noise_sigma
        for t in self.scheduler.timesteps:
            model_in = self.scheduler.scale_model_input(latents, t)
            noise_pred = self.denoiser(model_in, t)
            latents = self.scheduler.step(noise_pred, t, latents, generator=gen)
        return latents


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    pipe = LatentPipeline(TinyDenoiser(), EulerAncestralScheduler(), device)
    latents = pipe(steps=20)
    print("latents", tuple(latents.shape), "std", f"{latents.std().item():.3f}")


if __name__ == "__main__":
    main()
