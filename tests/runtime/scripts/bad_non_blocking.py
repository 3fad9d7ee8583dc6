"""non_blocking from pageable memory, and a non_blocking device->host result read too early."""

import torch

x = torch.ones(1000)
y = x.to("cuda", non_blocking=True)  # expect: TP251
host = (y * 2).to("cpu", non_blocking=True)
print(float(host.sum()))  # expect: TP208
