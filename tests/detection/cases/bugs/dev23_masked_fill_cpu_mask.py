# source: https://github.com/Haoming02/sd-webui-forge-classic/issues/395
# area: device placement
# bug: a dropout-style mask is sampled on the CPU and applied to GPU activations
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(10, 10).to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for _ in range(3):
    h = model(torch.randn(3, 10, device=device))
    drop = torch.rand(3, 10) < 0.1  # expect[m]: any
    h = h.masked_fill(drop, 0.0)  # expect[m]: TP150
    loss = h.pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
