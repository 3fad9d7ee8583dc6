# source: https://github.com/huggingface/diffusers/issues/8960
# area: AMP
# bug: with gradient accumulation the loop unscales and clips on every micro-batch but only steps/updates the GradScaler every N batches, so on a GPU the second micro-batch raises "unscale_() has already been called on this optimizer since the last update()"
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class TrainingConfig:
    image_size: int = 16
    train_batch_size: int = 8
    num_epochs: int = 2
    gradient_accumulation_steps: int = 2
    learning_rate: float = 1e-4
    lr_warmup_steps: int = 4
    num_train_timesteps: int = 100
    mixed_precision: bool = torch.cuda.is_available()


class DDPMScheduler:
    def __init__(self, num_train_timesteps, device):
        self.num_train_timesteps = num_train_timesteps
        betas = torch.linspace(1e-4, 0.02, num_train_timesteps, device=device)
        self.alphas_cumprod = torch.cumprod(1.0 - betas, dim=0)

    def add_noise(self, x0, noise, t):
        a = self.alphas_cumprod[t].view(-1, 1, 1, 1)
        return a.sqrt() * x0 + (1 - a).sqrt() * noise


def timestep_embedding(t, dim):
    half = dim // 2
    freqs = torch.exp(-math.log(10000) * torch.arange(half, device=t.device) / half)
    args = t.float()[:, None] * freqs[None]
    return torch.cat([args.sin(), args.cos()], dim=-1)


class TinyUNet(nn.Module):
    def __init__(self, ch=32):
        super().__init__()
        self.t_mlp = nn.Sequential(nn.Linear(ch, ch), nn.SiLU(), nn.Linear(ch, ch))
        self.down = nn.Conv2d(3, ch, 3, stride=2, padding=1)
        self.mid = nn.Sequential(nn.GroupNorm(8, ch), nn.SiLU(), nn.Conv2d(ch, ch, 3, padding=1))
        self.up = nn.ConvTranspose2d(ch, ch, 4, stride=2, padding=1)
        self.out = nn.Conv2d(ch + 3, 3, 3, padding=1)
        self.ch = ch

    def forward(self, x, t):
        h = self.down(x) + self.t_mlp(timestep_embedding(t, self.ch))[:, :, None, None]
        h = self.up(h + self.mid(h))
        return self.out(torch.cat([h, x], dim=1))


def train_loop(config, model, noise_scheduler, optimizer, train_dataloader, lr_scheduler, device):
    scaler = torch.amp.GradScaler("cuda", enabled=config.mixed_precision)
    for epoch in range(config.num_epochs):
        epoch_loss = torch.zeros((), device=device)
        for step, (clean_images,) in enumerate(train_dataloader):
            clean_images = clean_images.to(device, non_blocking=True)
            noise = torch.randn_like(clean_images)
            timesteps = torch.randint(0, config.num_train_timesteps, (clean_images.size(0),), device=device)
            noisy_images = noise_scheduler.add_noise(clean_images, noise, timesteps)
            with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=config.mixed_precision):
                noise_pred = model(noisy_images, timesteps)
                loss = F.mse_loss(noise_pred.float(), noise) / config.gradient_accumulation_steps
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)  # expect[acc]: any
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # expect[acc]: any
            if (step + 1) % config.gradient_accumulation_steps == 0:
                scaler.step(optimizer)
                scaler.update()
                lr_scheduler.step()
                optimizer.zero_grad(set_to_none=True)
            epoch_loss += loss.detach()
        print(f"epoch {epoch}: loss {epoch_loss.item():.4f}")


def main():
    config = TrainingConfig()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    images = torch.rand(32, 3, config.image_size, config.image_size) * 2 - 1
    train_dataloader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(images), batch_size=config.train_batch_size,
        shuffle=True, pin_memory=device.type == "cuda",
    )
    model = TinyUNet().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate)
    lr_scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / config.lr_warmup_steps)
    )
    noise_scheduler = DDPMScheduler(config.num_train_timesteps, device)
    train_loop(config, model, noise_scheduler, optimizer, train_dataloader, lr_scheduler, device)


if __name__ == "__main__":
    main()
