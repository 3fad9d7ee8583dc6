# twin of: bugs/xfer12_non_blocking_from_pageable.py
# area: transfer & sync
# correct: the loader pins its batches, so non_blocking copies can overlap
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
data = TensorDataset(torch.randn(64, 20), torch.randint(0, 4, (64,)))
loader = DataLoader(data, batch_size=16, shuffle=True, pin_memory=torch.cuda.is_available())
model = nn.Linear(20, 4).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    x = x.to(device, non_blocking=True)
    y = y.to(device, non_blocking=True)
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
