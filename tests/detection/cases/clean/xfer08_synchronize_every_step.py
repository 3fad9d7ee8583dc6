# twin of: bugs/xfer08_synchronize_every_step.py
# area: transfer & sync
# correct: synchronize once after the loop to time it
import time

import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(32, 32).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
start = time.perf_counter()
for step in range(5):
    x = torch.randn(64, 32, device=device)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
if torch.cuda.is_available():
    torch.cuda.synchronize()
print(f"{time.perf_counter() - start:.3f}s")
