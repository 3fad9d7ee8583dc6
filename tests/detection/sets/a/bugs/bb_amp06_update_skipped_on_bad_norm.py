# source: https://github.com/Haian-Jin/LVSM/pull/19
# area: AMP
# bug: when the unscaled grad norm is non-finite or too large the helper returns before scaler.update(); on GPU the first fp16 overflow (common while the scale calibrates) leaves the scaler un-updated, the scale never backs off, and the next unscale_ raises "unscale_() has already been called on this optimizer since the last update()"
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
    if not torch.isfinite(grad_norm) or grad_norm > cfg.skip_threshold:
        print(f"step {step}: grad norm {grad_norm.item():.2f} too large, skipping update")
        optimizer.zero_grad(set_to_none=True)
        return False  # expect[upd]: any
    scaler.step(optimizer)
    scaler.update()  # expect[upd]: any
    optimizer.zero_grad(set_to_none=True)
    return True


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
