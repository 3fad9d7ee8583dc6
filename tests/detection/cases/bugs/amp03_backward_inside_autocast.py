# source: https://github.com/pytorch/pytorch/pull/175241
# area: AMP
# bug: loss.backward() is called inside the autocast block
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
amp_dtype = torch.float16 if device.type == "cuda" else torch.bfloat16
model = nn.Linear(10, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
scaler = torch.amp.GradScaler(device.type, enabled=device.type == "cuda")
for _ in range(3):
    x = torch.randn(8, 10, device=device)
    opt.zero_grad()
    with torch.autocast(device_type=device.type, dtype=amp_dtype):
        loss = model(x).float().pow(2).mean()
        scaler.scale(loss).backward()  # expect: TP307
    scaler.step(opt)
    scaler.update()
