"""Pinned source for non_blocking uploads, and a sync before reading a non_blocking download."""

import torch

x = torch.ones(1000).pin_memory()
y = x.to("cuda", non_blocking=True)
host = (y * 2).to("cpu", non_blocking=True)
torch.cuda.synchronize()
print(float(host.sum()))
