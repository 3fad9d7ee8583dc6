# twin of: bugs/bb_amp06_update_skipped_on_bad_norm.py
# area: AMP
# correct: scaler.update() runs on every iteration, including skipped ones, so after an overflow the scale backs off and the per-optimizer unscale state is reset
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


@dataclass
class Config:
    amp: bool = device.type == "cuda"
    lr: float = 3e-4
    clip: float = 2.0
    skip_threshold: float = 50.0
    steps: int = 40


class ViewSynth(nn.Module):
    def __init__(self, dim=48):
        super().__init__()
        self.patch = nn.Conv2d(6, dim, 4, stride=4)
        layer = nn.TransformerEncoderLayer(dim, 4, 2 * dim, batch_first=True, norm_first=True)
        self.body = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.unpatch = nn.ConvTranspose2d(dim, 3, 4, stride=4)

    def forward(self, src, ray):
        x = self.patch(torch.cat([src, ray], 1))
        b, c, h, w = x.shape
        x = self.body(x.flatten(2).transpose(1, 2)).transpose(1, 2).reshape(b, c, h, w)
        return torch.sigmoid(self.unpatch(x))


def optimizer_step(model, optimizer, scaler, cfg, step):
    scaler.unscale_(optimizer)
    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip)
    updated = bool(torch.isfinite(grad_norm) & (grad_norm <= cfg.skip_threshold))
    if not updated:
        print(f"step {step}: grad norm {grad_norm.item():.2f} too large, skipping update")
    else:
        scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    return updated


cfg = Config()
model = ViewSynth().to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
scaler = torch.amp.GradScaler("cuda", enabled=cfg.amp)

for step in range(cfg.steps):
    src = torch.rand(4, 3, 32, 32, device=device)
    ray = torch.randn(4, 3, 32, 32, device=device)
    target = src.flip(-1)
    with torch.autocast(device_type="cuda", dtype=torch.float16, enabled=cfg.amp):
        loss = F.mse_loss(model(src, ray), target)
    scaler.scale(loss).backward()
    updated = optimizer_step(model, optimizer, scaler, cfg, step)
    if step % 10 == 0:
        print(f"step {step} loss {loss.item():.4f} updated={updated}")
