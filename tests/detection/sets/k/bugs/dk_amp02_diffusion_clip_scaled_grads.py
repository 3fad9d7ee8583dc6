# source: https://github.com/harubaru/waifu-diffusion/issues/64
# area: AMP
# bug: with fp16 on a GPU the gradients are clipped while still multiplied by the GradScaler scale, so the clip threshold is effectively divided by ~65536 and updates are crushed
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


def parse_args(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--fp16", action="store_true", default=True)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--clip_grad_norm", type=float, default=1.0)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch_size", type=int, default=8)
    return p.parse_args(argv)


class NoiseSchedule:
    def __init__(self, steps=1000, device="cpu"):
        betas = torch.linspace(1e-4, 0.02, steps, device=device)
        self.alphas_cumprod = torch.cumprod(1.0 - betas, dim=0)

    def add_noise(self, x0, noise, t):
        a = self.alphas_cumprod[t].view(-1, 1, 1, 1)
        return a.sqrt() * x0 + (1 - a).sqrt() * noise


class Denoiser(nn.Module):
    def __init__(self, ch=4, hidden=48):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(ch + 1, hidden, 3, padding=1), nn.SiLU(),
            nn.Conv2d(hidden, hidden, 3, padding=1), nn.SiLU(),
            nn.Conv2d(hidden, ch, 3, padding=1),
        )

    def forward(self, x, t):
        tmap = (t.float() / 1000.0).view(-1, 1, 1, 1).expand(-1, 1, *x.shape[2:])
        return self.net(torch.cat([x, tmap.to(x.dtype)], dim=1))


class LatentTrainer:
    def __init__(self, args, device):
        self.args = args
        self.device = device
        self.unet = Denoiser().to(device)
        self.schedule = NoiseSchedule(device=device)
        self.optimizer = torch.optim.AdamW(self.unet.parameters(), lr=args.lr)
        self.use_amp = args.fp16 and device.type == "cuda"
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.use_amp)

    def train_step(self, latents):
        noise = torch.randn_like(latents)
        t = torch.randint(0, 1000, (latents.shape[0],), device=self.device)
        noisy = self.schedule.add_noise(latents, noise, t)
        with torch.autocast(device_type=self.device.type, dtype=torch.float16, enabled=self.use_amp):
            pred = self.unet(noisy, t)
            loss = F.mse_loss(pred.float(), noise)
        self.scaler.scale(loss).backward()
        if self.args.clip_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(self.unet.parameters(), self.args.clip_grad_norm)  # expect: any
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.optimizer.zero_grad(set_to_none=True)
        return loss.detach()

    def fit(self, dataset):
        history = []
        for epoch in range(self.args.epochs):
            total = torch.zeros((), device=self.device)
            for i in range(0, dataset.shape[0], self.args.batch_size):
                batch = dataset[i:i + self.args.batch_size].to(self.device)
                total += self.train_step(batch)
            history.append(total / (dataset.shape[0] // self.args.batch_size))
        return torch.stack(history).cpu()


def main():
    torch.manual_seed(0)
    args = parse_args([])
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    latents = torch.randn(64, 4, 16, 16) * 0.18215
    trainer = LatentTrainer(args, device)
    losses = trainer.fit(latents)
    print("epoch losses:", [round(v, 4) for v in losses.tolist()])


if __name__ == "__main__":
    main()
