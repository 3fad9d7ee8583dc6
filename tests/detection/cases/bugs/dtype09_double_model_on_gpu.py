# source: https://github.com/pytorch/pytorch/issues/4588
# area: dtype
# bug: the whole model is converted to float64 and trained on the GPU, many times slower
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1)).double().to(device)  # expect[d]: TP302
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for _ in range(3):
    x = torch.randn(16, 8, device=device, dtype=torch.float64)  # expect[d]: TP302
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
