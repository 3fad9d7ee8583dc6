# source: https://github.com/thuml/Time-Series-Library/issues/740
# area: AMP
# bug: torch.cuda.amp.GradScaler is deprecated in favour of torch.amp.GradScaler("cuda")
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
use_amp = device.type == "cuda"
model = nn.Linear(4, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.cuda.amp.GradScaler(enabled=use_amp)  # expect: TP305
for _ in range(3):
    with torch.autocast(device_type=device.type, enabled=use_amp):
        loss = model(torch.randn(3, 4, device=device)).float().pow(2).mean()
    opt.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
