# twin of: bugs/amp05_bf16_with_grad_scaler.py
# area: AMP
# correct: bfloat16 autocast needs no loss scaling
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(8, 8).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(3):
    x = torch.randn(4, 8, device=device)
    with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
        loss = model(x).float().pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
