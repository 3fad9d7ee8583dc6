# source: https://github.com/rwth-i6/returnn/issues/1590
# area: AMP
# bug: scaler.scale(loss) is called but its result is dropped; backward runs on the unscaled loss
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
use_amp = device.type == "cuda"
model = nn.Linear(7, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
for _ in range(3):
    with torch.autocast(device_type=device.type, enabled=use_amp):
        loss = model(torch.randn(6, 7, device=device)).float().pow(2).mean()
    opt.zero_grad()
    scaler.scale(loss)  # expect: any
    loss.backward()
    scaler.step(opt)
    scaler.update()
