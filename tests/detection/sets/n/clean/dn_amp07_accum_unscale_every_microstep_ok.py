# twin of: bugs/dn_amp07_accum_unscale_every_microstep.py
# area: AMP
# correct: unscale_ and clipping happen only on the accumulation boundary, right before scaler.step/update, once per optimizer step
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class DreamboothConfig:
    gradient_accumulation_steps: int = 4
    max_grad_norm: float = 1.0
    learning_rate: float = 5e-5
    train_batch_size: int = 2
    num_samples: int = 32
    mixed_precision: str = "fp16"


class InstanceDataset(torch.utils.data.Dataset):
    def __init__(self, n, channels=4, size=16):
        g = torch.Generator().manual_seed(1)
        self.latents = torch.randn(n, channels, size, size, generator=g)
        self.prompt_ids = torch.randint(0, 100, (n, 8), generator=g)

    def __len__(self):
        return len(self.latents)

    def __getitem__(self, i):
        return self.latents[i], self.prompt_ids[i]


class MiniUNet(nn.Module):
    def __init__(self, channels=4, width=32, vocab=100):
        super().__init__()
        self.text = nn.Embedding(vocab, width)
        self.down = nn.Conv2d(channels, width, 3, padding=1)
        self.mid = nn.Conv2d(width, width, 3, padding=1)
        self.up = nn.Conv2d(width, channels, 3, padding=1)

    def forward(self, x, ids):
        cond = self.text(ids).mean(1)[:, :, None, None]
        h = F.silu(self.down(x)) + cond
        h = F.silu(self.mid(h))
        return self.up(h)


def train(cfg: DreamboothConfig):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = cfg.mixed_precision == "fp16" and device.type == "cuda"
    unet = MiniUNet().to(device)
    optimizer = torch.optim.AdamW(unet.parameters(), lr=cfg.learning_rate)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    loader = torch.utils.data.DataLoader(InstanceDataset(cfg.num_samples), batch_size=cfg.train_batch_size,
                                         shuffle=True, pin_memory=use_amp)
    global_step = 0
    for step, (latents, ids) in enumerate(loader):
        latents = latents.to(device, non_blocking=True)
        ids = ids.to(device, non_blocking=True)
        noise = torch.randn_like(latents)
        t = torch.rand(latents.shape[0], 1, 1, 1, device=device)
        noisy = (1 - t) * latents + t * noise
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
            pred = unet(noisy, ids)
        loss = F.mse_loss(pred.float(), noise) / cfg.gradient_accumulation_steps
        scaler.scale(loss).backward()
        if (step + 1) % cfg.gradient_accumulation_steps == 0:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(unet.parameters(), cfg.max_grad_norm)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
            global_step += 1
    return global_step


if __name__ == "__main__":
    print("optimizer steps:", train(DreamboothConfig()))
