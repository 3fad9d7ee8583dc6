# source: https://github.com/pytorch/examples/issues/1196
# area: AMP
# bug: gradients are clipped while still multiplied by the loss scale (no scaler.unscale_ first)
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
use_amp = device.type == "cuda"
model = nn.Sequential(nn.Linear(12, 24), nn.GELU(), nn.Linear(24, 1)).to(device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
for _ in range(3):
    x = torch.randn(16, 12, device=device)
    with torch.autocast(device_type=device.type, enabled=use_amp):
        loss = model(x).float().pow(2).mean()
    opt.zero_grad()
    scaler.scale(loss).backward()
    nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)  # expect: any
    scaler.step(opt)
    scaler.update()
