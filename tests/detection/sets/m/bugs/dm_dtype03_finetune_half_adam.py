# source: https://github.com/afiaka87/glide-finetune/pull/6
# area: dtype
# bug: on CUDA the denoiser is converted to float16 but AdamW keeps its default eps=1e-8, which rounds to 0 in float16, so parameters with zero gradient (unused class rows) become NaN after the first step
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class FinetuneConfig:
    num_classes: int = 100
    image_size: int = 32
    batch_size: int = 8
    lr: float = 1e-4
    weight_decay: float = 0.0
    timesteps: int = 1000
    use_fp16: bool = True
    steps: int = 4


class ClassCondDenoiser(nn.Module):
    def __init__(self, num_classes, ch=32):
        super().__init__()
        self.class_emb = nn.Embedding(num_classes, ch)
        self.time_mlp = nn.Sequential(nn.Linear(1, ch), nn.SiLU(), nn.Linear(ch, ch))
        self.inp = nn.Conv2d(3, ch, 3, padding=1)
        self.mid = nn.Conv2d(ch, ch, 3, padding=1)
        self.out = nn.Conv2d(ch, 3, 3, padding=1)

    def forward(self, x, t, y):
        cond = self.class_emb(y) + self.time_mlp(t[:, None].to(x.dtype))
        h = F.silu(self.inp(x)) + cond[:, :, None, None]
        h = F.silu(self.mid(h))
        return self.out(h)


def noise_schedule(cfg, device):
    betas = torch.linspace(1e-4, 0.02, cfg.timesteps, device=device)
    return torch.cumprod(1.0 - betas, dim=0)


def build(cfg, device):
    model = ClassCondDenoiser(cfg.num_classes).to(device)
    if cfg.use_fp16 and device.type == "cuda":
        model = model.half()
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)  # expect: any
    return model, optimizer


def synthetic_batch(cfg, device, dtype):
    x0 = torch.rand(cfg.batch_size, 3, cfg.image_size, cfg.image_size, device=device) * 2 - 1
    y = torch.randint(0, 4, (cfg.batch_size,), device=device)
    return x0.to(dtype), y


def train_step(model, optimizer, alphas_bar, cfg, device):
    dtype = next(model.parameters()).dtype
    x0, y = synthetic_batch(cfg, device, dtype)
    t = torch.randint(0, cfg.timesteps, (cfg.batch_size,), device=device)
    a = alphas_bar[t].to(dtype)[:, None, None, None]
    noise = torch.randn_like(x0)
    xt = a.sqrt() * x0 + (1 - a).sqrt() * noise
    pred = model(xt, t.float() / cfg.timesteps, y)
    loss = F.mse_loss(pred.float(), noise.float())
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.detach()


def main():
    cfg = FinetuneConfig()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    model, optimizer = build(cfg, device)
    alphas_bar = noise_schedule(cfg, device)
    losses = [train_step(model, optimizer, alphas_bar, cfg, device) for _ in range(cfg.steps)]
    finite = torch.isfinite(model.class_emb.weight).all()
    print("loss", float(torch.stack(losses).mean()), "class table finite:", bool(finite))


if __name__ == "__main__":
    main()
