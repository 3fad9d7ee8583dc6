# source: https://github.com/jinxixiang/magic_animate_unofficial/issues/6
# area: dtype
# bug: on the GPU the denoiser weights are cast to float16 and trained with AdamW at eps=1e-8, which underflows to 0 in float16, so the update divides by zero and the weights become NaN
import argparse
import torch
import torch.nn as nn
import torch.nn.functional as F


def parse_args(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--adam_epsilon", type=float, default=1e-8)
    p.add_argument("--mixed_precision", default="fp16")
    return p.parse_args(argv)


class TinyDenoiser(nn.Module):
    def __init__(self, ch=16, pose_ch=3):
        super().__init__()
        self.pose_enc = nn.Conv2d(pose_ch, ch, 3, padding=1)
        self.inp = nn.Conv2d(4, ch, 3, padding=1)
        self.t_emb = nn.Sequential(nn.Linear(1, ch), nn.SiLU(), nn.Linear(ch, ch))
        self.mid = nn.Sequential(nn.GroupNorm(8, ch), nn.SiLU(), nn.Conv2d(ch, ch, 3, padding=1))
        self.out = nn.Conv2d(ch, 4, 3, padding=1)

    def forward(self, latents, t, pose):
        h = self.inp(latents) + self.pose_enc(pose)
        h = h + self.t_emb(t[:, None].to(h.dtype))[:, :, None, None]
        return self.out(self.mid(h))


def make_schedule(num_steps=1000, device="cpu"):
    betas = torch.linspace(1e-4, 0.02, num_steps, device=device)
    return torch.cumprod(1.0 - betas, dim=0)


def add_noise(latents, noise, t, alphas_cumprod):
    a = alphas_cumprod[t].to(latents.dtype)[:, None, None, None]
    return a.sqrt() * latents + (1 - a).sqrt() * noise


def main(argv=None):
    args = parse_args(argv)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    weight_dtype = torch.float16 if (args.mixed_precision == "fp16" and device.type == "cuda") else torch.float32

    unet = TinyDenoiser().to(device, dtype=weight_dtype)  # expect[eps]: any
    optimizer = torch.optim.AdamW(unet.parameters(), lr=args.lr, eps=args.adam_epsilon, weight_decay=1e-2)  # expect[eps]: any
    alphas_cumprod = make_schedule(device=device)

    gen = torch.Generator(device="cpu").manual_seed(0)
    video_latents = torch.randn(16, 4, 16, 16, generator=gen)
    poses = torch.rand(16, 3, 16, 16, generator=gen)

    unet.train()
    for step in range(args.steps):
        idx = torch.randint(0, 16, (4,), generator=gen)
        latents = video_latents[idx].to(device, dtype=weight_dtype)
        pose = poses[idx].to(device, dtype=weight_dtype)
        noise = torch.randn_like(latents)
        t = torch.randint(0, alphas_cumprod.numel(), (latents.size(0),), device=device)
        noisy = add_noise(latents, noise, t, alphas_cumprod)

        pred = unet(noisy, t.float() / alphas_cumprod.numel(), pose)
        loss = F.mse_loss(pred.float(), noise.float())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    finite = all(torch.isfinite(p).all() for p in unet.parameters())
    print(f"final loss {loss.item():.4f}, weights finite: {finite}")


if __name__ == "__main__":
    main()
