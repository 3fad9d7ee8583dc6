# source: https://github.com/vladmandic/sdnext/issues/2154
# area: device placement
# bug: torch.where gets a condition built from CPU data and GPU branches
import numpy as np
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 4).to(device)
valid = torch.from_numpy(np.array([True, False, True, True]))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    out = model(torch.randn(2, 4, device=device))
    out = torch.where(valid, out, torch.zeros_like(out))  # expect: TP150
    loss = out.pow(2).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
