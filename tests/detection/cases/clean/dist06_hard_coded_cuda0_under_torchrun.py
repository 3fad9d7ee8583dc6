# twin of: bugs/dist06_hard_coded_cuda0_under_torchrun.py
# area: porting & distributed
# correct: each process takes its GPU from LOCAL_RANK
import os

import torch
from torch import nn

rank = int(os.environ.get("RANK", "0"))
local_rank = int(os.environ.get("LOCAL_RANK", "0"))
device = torch.device(f"cuda:{local_rank}" if torch.cuda.is_available() else "cpu")
model = nn.Linear(6, 6).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(2):
    loss = model(torch.randn(3, 6, device=device)).pow(2).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("rank", rank, "done")
