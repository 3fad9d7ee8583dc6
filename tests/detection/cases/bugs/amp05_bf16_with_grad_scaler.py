# source: https://github.com/huggingface/accelerate/pull/1036
# area: AMP
# bug: bfloat16 autocast combined with a GradScaler, which bf16 does not need
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(8, 8).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
scaler = torch.amp.GradScaler(device.type, enabled=device.type == "cuda")
for _ in range(3):
    x = torch.randn(4, 8, device=device)
    with torch.autocast(device_type=device.type, dtype=torch.bfloat16):  # expect: TP308
        loss = model(x).float().pow(2).mean()
    opt.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
