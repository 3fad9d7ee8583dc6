# source: https://github.com/yk7333/d3po/issues/6
# area: AMP
# bug: the trainable UNet is cast to float16 together with the frozen VAE/text encoder, so on a GPU GradScaler raises "Attempting to unscale FP16 gradients"
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class RewardTuneConfig:
    mixed_precision: str = "fp16"
    use_lora: bool = False
    lr: float = 3e-4
    steps: int = 4
    batch_size: int = 4
    latent_ch: int = 4
    latent_hw: int = 16
    vocab: int = 64
    max_grad_norm: float = 1.0


class TinyTextEncoder(nn.Module):
    def __init__(self, vocab, dim=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, ids):
        return self.proj(self.emb(ids).mean(dim=1))


class TinyVAEDecoder(nn.Module):
    def __init__(self, latent_ch):
        super().__init__()
        self.up = nn.ConvTranspose2d(latent_ch, 8, 4, stride=2, padding=1)
        self.out = nn.Conv2d(8, 3, 3, padding=1)

    def forward(self, z):
        return torch.sigmoid(self.out(F.silu(self.up(z))))


class TinyUNet(nn.Module):
    def __init__(self, latent_ch, cond_dim=32, hidden=32):
        super().__init__()
        self.inp = nn.Conv2d(latent_ch, hidden, 3, padding=1)
        self.cond = nn.Linear(cond_dim + 1, hidden)
        self.mid = nn.Conv2d(hidden, hidden, 3, padding=1)
        self.out = nn.Conv2d(hidden, latent_ch, 3, padding=1)

    def forward(self, x, t, cond):
        temb = torch.cat([cond, (t.float() / 1000.0).unsqueeze(1).to(cond.dtype)], dim=1)
        h = F.silu(self.inp(x)) + self.cond(temb)[:, :, None, None]
        return self.out(F.silu(self.mid(h)))


class RewardPipeline(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.text_encoder = TinyTextEncoder(cfg.vocab)
        self.vae = TinyVAEDecoder(cfg.latent_ch)
        self.unet = TinyUNet(cfg.latent_ch)


def place_pipeline(pipe, device, cfg):
    use_half = cfg.mixed_precision == "fp16" and device.type == "cuda"
    inference_dtype = torch.float16 if use_half else torch.float32
    pipe.vae.to(device, dtype=inference_dtype)
    pipe.text_encoder.to(device, dtype=inference_dtype)
    pipe.unet.to(device, dtype=inference_dtype)  # expect: any
    pipe.vae.requires_grad_(False)
    pipe.text_encoder.requires_grad_(False)
    return inference_dtype


def brightness_reward(images):
    return -((images.float().mean(dim=(1, 2, 3)) - 0.6) ** 2)


def reward_finetune(cfg):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    pipe = RewardPipeline(cfg)
    inference_dtype = place_pipeline(pipe, device, cfg)
    use_amp = device.type == "cuda" and cfg.mixed_precision == "fp16"
    optimizer = torch.optim.AdamW(pipe.unet.parameters(), lr=cfg.lr)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    rewards = []
    for step in range(cfg.steps):
        prompt_ids = torch.randint(0, cfg.vocab, (cfg.batch_size, 8), device=device)
        with torch.no_grad():
            cond = pipe.text_encoder(prompt_ids)
        shape = (cfg.batch_size, cfg.latent_ch, cfg.latent_hw, cfg.latent_hw)
        latents = torch.randn(shape, device=device, dtype=inference_dtype)
        t = torch.randint(0, 1000, (cfg.batch_size,), device=device)
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
            eps = pipe.unet(latents, t, cond)
            alpha = math.sqrt(0.9)
            denoised = (latents - math.sqrt(1 - alpha ** 2) * eps) / alpha
            images = pipe.vae(denoised)
            reward = brightness_reward(images)
            loss = -reward.mean()
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(pipe.unet.parameters(), cfg.max_grad_norm)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        rewards.append(reward.detach().mean())
    return torch.stack(rewards).cpu()


if __name__ == "__main__":
    torch.manual_seed(0)
    history = reward_finetune(RewardTuneConfig())
    print("mean reward per step:", [round(v, 4) for v in history.tolist()])
