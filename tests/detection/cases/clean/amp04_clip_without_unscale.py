# twin of: bugs/amp04_clip_without_unscale.py
# area: AMP
# correct: unscale_ before clipping, then step and update
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
    scaler.unscale_(opt)
    nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    scaler.step(opt)
    scaler.update()
