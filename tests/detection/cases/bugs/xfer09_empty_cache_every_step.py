# source: https://theneuralbase.com/pytorch/learn/intermediate/memory-leak-detection/
# area: transfer & sync
# bug: torch.cuda.empty_cache() in every iteration stalls the loop
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 1)).to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(4):
    x = torch.randn(8, 16, device=device)
    loss = model(x).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    del x
    if torch.cuda.is_available():
        torch.cuda.empty_cache()  # expect: TP207
