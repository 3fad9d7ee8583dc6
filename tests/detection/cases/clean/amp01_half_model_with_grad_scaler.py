# twin of: bugs/amp01_half_model_with_grad_scaler.py
# area: AMP
# correct: float32 weights, float16 compute under autocast, GradScaler for the loss
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
use_amp = device.type == "cuda"
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
for _ in range(3):
    x = torch.randn(4, 8, device=device)
    with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
        loss = model(x).float().pow(2).mean()
    opt.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
