# source: https://github.com/huggingface/accelerate/pull/134
# area: AMP
# bug: the AMP wrapper hands back float16 projections and the NT-Xent loss is computed after leaving autocast, so on a GPU exp(sim / 0.07) overflows float16 and the loss becomes inf/NaN
import torch
import torch.nn as nn
import torch.nn.functional as F
from dataclasses import dataclass


@dataclass
class SSLConfig:
    img_size: int = 16
    batch_size: int = 64
    proj_dim: int = 32
    temperature: float = 0.07
    lr: float = 3e-4
    steps: int = 8
    mixed_precision: str = "fp16"


class MixedPrecisionModule(nn.Module):
    def __init__(self, module, device_type, mixed_precision):
        super().__init__()
        self.module = module
        self.device_type = device_type
        self.enabled = mixed_precision == "fp16" and device_type == "cuda"

    def forward(self, *args, **kwargs):
        with torch.autocast(self.device_type, dtype=torch.float16, enabled=self.enabled):
            return self.module(*args, **kwargs)  # expect[out]: any


class Encoder(nn.Module):
    def __init__(self, proj_dim):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.projector = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, proj_dim))

    def forward(self, x):
        return self.projector(self.backbone(x))


def augment(x):
    flip = torch.rand(x.shape[0], 1, 1, 1, device=x.device) < 0.5
    x = torch.where(flip, x.flip(-1), x)
    jitter = 1.0 + 0.2 * (torch.rand(x.shape[0], 3, 1, 1, device=x.device) - 0.5)
    return (x * jitter + 0.05 * torch.randn_like(x)).clamp(0, 1)


def nt_xent(z1, z2, temperature):
    z = F.normalize(torch.cat([z1, z2], dim=0), dim=1)
    n = z1.shape[0]
    sim = torch.exp(z @ z.t() / temperature)
    self_mask = torch.eye(2 * n, dtype=torch.bool, device=z.device)
    denom = sim.masked_fill(self_mask, 0).sum(dim=1)
    pos = torch.cat([torch.diagonal(sim, n), torch.diagonal(sim, -n)])
    return -torch.log(pos / denom).mean()


def pretrain(cfg, device):
    model = MixedPrecisionModule(Encoder(cfg.proj_dim).to(device), device.type, cfg.mixed_precision)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=1e-4)
    scaler = torch.amp.GradScaler(device.type, enabled=model.enabled)
    images = torch.rand(512, 3, cfg.img_size, cfg.img_size, device=device)
    history = torch.zeros(cfg.steps, device=device)
    for step in range(cfg.steps):
        idx = torch.randint(0, images.shape[0], (cfg.batch_size,), device=device)
        batch = images[idx]
        z1, z2 = model(augment(batch)), model(augment(batch))
        loss = nt_xent(z1, z2, cfg.temperature)  # expect[out]: any
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        history[step] = loss.detach()
    print("nt-xent per step:", [round(v, 3) for v in history.tolist()])


if __name__ == "__main__":
    pretrain(SSLConfig(), torch.device("cuda" if torch.cuda.is_available() else "cpu"))
