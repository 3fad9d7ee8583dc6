# source: https://github.com/victorchall/EveryDream2trainer/pull/175
# area: AMP
# bug: clip_grad_norm_ runs on the still-scaled gradients (no scaler.unscale_ first), so on a GPU the measured norm is ~65536x too large and clipping fires every step at an effective threshold of max_norm/scale
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="tiny denoiser fine-tune")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--batch_size", type=int, default=16)
    p.add_argument("--lr", type=float, default=2e-4)
    p.add_argument("--clip_grad_norm", type=float, default=1.0)
    p.add_argument("--amp", action="store_true", default=True)
    return p.parse_args(argv)


class TinyDenoiser(nn.Module):
    def __init__(self, ch=3, width=32, t_dim=16):
        super().__init__()
        self.t_embed = nn.Sequential(nn.Linear(1, t_dim), nn.SiLU(), nn.Linear(t_dim, width))
        self.inp = nn.Conv2d(ch, width, 3, padding=1)
        self.mid = nn.Sequential(nn.GroupNorm(8, width), nn.SiLU(), nn.Conv2d(width, width, 3, padding=1))
        self.out = nn.Conv2d(width, ch, 3, padding=1)

    def forward(self, x, t):
        h = self.inp(x) + self.t_embed(t[:, None]).view(x.shape[0], -1, 1, 1)
        return self.out(h + self.mid(h))


def noise_schedule(t):
    alpha_bar = torch.cos(t * torch.pi / 2) ** 2
    return alpha_bar.sqrt(), (1 - alpha_bar).sqrt()


def main(argv=None):
    args = parse_args(argv)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = args.amp and device.type == "cuda"

    unet = TinyDenoiser().to(device)
    optimizer = torch.optim.AdamW(unet.parameters(), lr=args.lr)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    images = torch.rand(64, 3, 16, 16, device=device) * 2 - 1

    loss_sum = torch.zeros((), device=device)
    for step in range(args.steps):
        idx = torch.randint(0, images.shape[0], (args.batch_size,), device=device)
        x0 = images[idx]
        t = torch.rand(args.batch_size, device=device)
        noise = torch.randn_like(x0)
        a, s = noise_schedule(t)
        x_t = a.view(-1, 1, 1, 1) * x0 + s.view(-1, 1, 1, 1) * noise

        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
            pred = unet(x_t, t)
            loss = F.mse_loss(pred.float(), noise)

        scaler.scale(loss).backward()
        if args.clip_grad_norm > 0:
            torch.nn.utils.clip_grad_norm_(unet.parameters(), args.clip_grad_norm)  # expect: any
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        loss_sum += loss.detach()

    print(f"mean loss over {args.steps} steps: {(loss_sum / args.steps).item():.4f}")


if __name__ == "__main__":
    torch.manual_seed(0)
    main([])
