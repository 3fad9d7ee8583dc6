# source: https://github.com/ShivamShrirao/diffusers/issues/131
# area: AMP
# bug: the loss is scaled for backward but optimizer.step() is called directly
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
use_amp = device.type == "cuda"
model = nn.Linear(6, 2).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
for _ in range(3):
    with torch.autocast(device_type=device.type, enabled=use_amp):
        loss = model(torch.randn(4, 6, device=device)).float().pow(2).mean()
    optimizer.zero_grad()
    scaler.scale(loss).backward()
    optimizer.step()  # expect: TP309
    scaler.update()
