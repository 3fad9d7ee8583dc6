# source: https://github.com/pytorch/pytorch/pull/26512
# area: AMP
# bug: scaler.step() is never followed by scaler.update(), so the scale never adapts
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def train_step(model, opt, scaler, x, use_amp):
    with torch.autocast(device_type=device.type, enabled=use_amp):
        loss = model(x).float().pow(2).mean()
    opt.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(opt)  # expect: TP310
    return loss.detach()


use_amp = device.type == "cuda"
model = nn.Linear(3, 3).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
for _ in range(3):
    train_step(model, opt, scaler, torch.randn(5, 3, device=device), use_amp)
