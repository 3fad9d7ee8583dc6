# source: https://github.com/pytorch/pytorch/issues/83537
# area: transfer & sync
# bug: `if torch.isnan(loss):` checks for NaN on the host at every step
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(5):
    x = torch.randn(8, 4, device=device)
    loss = model(x).pow(2).mean()
    if torch.isnan(loss):  # expect: TP206
        print("nan at", step)
        break
    opt.zero_grad()
    loss.backward()
    opt.step()
