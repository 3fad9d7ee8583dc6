# source: https://github.com/rosinality/style-based-gan-pytorch/pull/50
# area: transfer & sync
# bug: an f-string with a format spec turns the device loss into a Python float at every step
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(2, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
lines = []
for step in range(5):
    loss = (model(torch.randn(4, 2, device=device)) - 2).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    lines.append(f"{step}: {loss:.4f}")  # expect: TP206
print(lines[-1])
