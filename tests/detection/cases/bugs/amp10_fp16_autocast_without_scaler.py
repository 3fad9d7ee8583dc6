# source: https://github.com/engichang1467/Open-Rig3R/issues/35
# area: AMP
# bug: float16 autocast training without a GradScaler: small gradients underflow to zero
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
use_amp = device.type == "cuda"
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1)).to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for _ in range(3):
    x = torch.randn(8, 16, device=device)
    with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):  # expect: any
        loss = model(x).float().pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
