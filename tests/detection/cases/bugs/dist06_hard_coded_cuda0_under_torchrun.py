# source: https://github.com/pytorch/examples/issues/969
# area: porting & distributed
# bug: a torchrun script pins every process to cuda:0 instead of its LOCAL_RANK
import os

import torch
from torch import nn

rank = int(os.environ.get("RANK", "0"))
device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")  # expect: TP110
model = nn.Linear(6, 6).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(2):
    loss = model(torch.randn(3, 6, device=device)).pow(2).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("rank", rank, "done")
