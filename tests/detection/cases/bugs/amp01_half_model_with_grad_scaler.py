# source: https://github.com/pytorch/pytorch/issues/74739
# area: AMP
# bug: the model is converted with .half() and then trained with a GradScaler
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
use_amp = device.type == "cuda"
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)).to(device).half()  # expect[h]: TP306
opt = torch.optim.SGD(model.parameters(), lr=0.01)
scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
for _ in range(3):
    x = torch.randn(4, 8, device=device).half()
    with torch.autocast(device_type=device.type, enabled=use_amp):
        loss = model(x).float().pow(2).mean()
    opt.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(opt)  # expect[h]: any
    scaler.update()
