# source: https://github.com/afiaka87/glide-finetune/issues/5
# area: dtype
# bug: on the GPU the whole model is cast to float16 and trained with AdamW's default eps=1e-8, which rounds to 0 in float16, so the update divides by zero and the weights turn NaN after the first step
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class FinetuneArgs:
    lr = 1e-4
    weight_decay = 0.0
    steps = 4
    batch_size = 8
    image_size = 16
    text_len = 12
    vocab = 2000
    timesteps = 100


def timestep_embedding(t, dim):
    half = dim // 2
    freqs = torch.exp(-math.log(10000) * torch.arange(half, device=t.device, dtype=torch.float32) / half)
    args = t.float()[:, None] * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class TextConditionedDenoiser(nn.Module):
    def __init__(self, vocab, ch=64, text_dim=64):
        super().__init__()
        self.tokens = nn.Embedding(vocab, text_dim)
        self.text_proj = nn.Linear(text_dim, ch)
        self.time_proj = nn.Sequential(nn.Linear(ch, ch), nn.SiLU(), nn.Linear(ch, ch))
        self.inp = nn.Conv2d(3, ch, 3, padding=1)
        self.mid = nn.Sequential(nn.GroupNorm(8, ch), nn.SiLU(), nn.Conv2d(ch, ch, 3, padding=1))
        self.out = nn.Conv2d(ch, 3, 3, padding=1)
        self.ch = ch

    def forward(self, x, t, text):
        cond = self.text_proj(self.tokens(text).mean(1))
        temb = self.time_proj(timestep_embedding(t, self.ch).to(x.dtype))
        h = self.inp(x) + (cond + temb)[:, :, None, None]
        return self.out(h + self.mid(h))


def make_schedule(timesteps, device):
    betas = torch.linspace(1e-4, 0.02, timesteps, device=device)
    return torch.cumprod(1.0 - betas, dim=0)


def finetune(model, args, device, dtype):
    alphas_bar = make_schedule(args.timesteps, device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)  # expect: any
    g = torch.Generator(device="cpu").manual_seed(0)
    images = torch.rand(64, 3, args.image_size, args.image_size, generator=g) * 2 - 1
    captions = torch.randint(0, 200, (64, args.text_len), generator=g)
    images, captions = images.to(device, dtype), captions.to(device)
    losses = []
    for step in range(args.steps):
        idx = torch.randint(0, images.size(0), (args.batch_size,), device=device)
        x0, text = images[idx], captions[idx]
        t = torch.randint(0, args.timesteps, (args.batch_size,), device=device)
        noise = torch.randn_like(x0)
        ab = alphas_bar[t].to(dtype)[:, None, None, None]
        xt = ab.sqrt() * x0 + (1 - ab).sqrt() * noise
        loss = F.mse_loss(model(xt, t, text).float(), noise.float())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
    return torch.stack(losses)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.float16 if device.type == "cuda" else torch.float32
    torch.manual_seed(0)
    args = FinetuneArgs()
    model = TextConditionedDenoiser(args.vocab).to(device=device, dtype=dtype)
    losses = finetune(model, args, device, dtype)
    finite = all(torch.isfinite(p).all() for p in model.parameters())
    print("losses:", [round(v, 4) for v in losses.tolist()], "weights finite:", bool(finite))


if __name__ == "__main__":
    main()
