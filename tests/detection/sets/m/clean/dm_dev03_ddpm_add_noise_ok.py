# twin of: bugs/dm_dev03_ddpm_add_noise.py
# area: device placement
# correct: the lookup table is moved to the samples' device once and kept there, so later add_noise calls do no host-to-device copy
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class DDPMNoiseScheduler:
    def __init__(self, num_train_timesteps=1000, beta_start=1e-4, beta_end=0.02):
        self.num_train_timesteps = num_train_timesteps
        self.betas = torch.linspace(beta_start, beta_end, num_train_timesteps, dtype=torch.float32)
        self.alphas = 1.0 - self.betas
        self.alphas_cumprod = torch.cumprod(self.alphas, dim=0)

    def add_noise(self, original_samples, noise, timesteps):
        if self.alphas_cumprod.device != original_samples.device:
            self.alphas_cumprod = self.alphas_cumprod.to(original_samples.device)
        alphas_cumprod = self.alphas_cumprod.to(dtype=original_samples.dtype)
        timesteps = timesteps.to(original_samples.device)
        sqrt_alpha_prod = alphas_cumprod[timesteps].sqrt()
        sqrt_one_minus = (1.0 - alphas_cumprod[timesteps]).sqrt()
        while sqrt_alpha_prod.dim() < original_samples.dim():
            sqrt_alpha_prod = sqrt_alpha_prod.unsqueeze(-1)
            sqrt_one_minus = sqrt_one_minus.unsqueeze(-1)
        return sqrt_alpha_prod * original_samples + sqrt_one_minus * noise


class TinyDenoiser(nn.Module):
    def __init__(self, ch=8, t_dim=32):
        super().__init__()
        self.t_embed = nn.Embedding(1000, t_dim)
        self.inp = nn.Conv2d(4, ch, 3, padding=1)
        self.t_proj = nn.Linear(t_dim, ch)
        self.mid = nn.Conv2d(ch, ch, 3, padding=1)
        self.out = nn.Conv2d(ch, 4, 3, padding=1)

    def forward(self, x, t):
        h = F.silu(self.inp(x))
        h = h + self.t_proj(self.t_embed(t))[:, :, None, None]
        h = F.silu(self.mid(h))
        return self.out(h)


def train_epoch(model, scheduler, optimizer, latents_bank, batch_size=16):
    model.train()
    running = torch.zeros((), device=device)
    n_batches = latents_bank.size(0) // batch_size
    for i in range(n_batches):
        latents = latents_bank[i * batch_size : (i + 1) * batch_size]
        noise = torch.randn_like(latents)
        timesteps = torch.randint(
            0, scheduler.num_train_timesteps, (latents.size(0),), device=latents.device
        )
        noisy = scheduler.add_noise(latents, noise, timesteps)
        loss = F.mse_loss(model(noisy, timesteps), noise)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        running += loss.detach()
    return running / n_batches


def main():
    torch.manual_seed(0)
    model = TinyDenoiser().to(device)
    scheduler = DDPMNoiseScheduler()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    latents_bank = torch.randn(256, 4, 8, 8, device=device)
    for epoch in range(3):
        avg = train_epoch(model, scheduler, optimizer, latents_bank)
        print(f"epoch {epoch}: loss {avg.item():.4f}")


if __name__ == "__main__":
    main()
