# source: https://github.com/pytorch/examples/issues/969
# area: porting & distributed
# bug: every rank resumes with torch.load(path) and so restores the tensors onto GPU 0
import os
import tempfile

import torch
from torch import nn

local_rank = int(os.environ.get("LOCAL_RANK", "0"))
device = torch.device(f"cuda:{local_rank}" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 4).to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
ckpt = os.path.join(tempfile.mkdtemp(), "resume.pt")
torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, ckpt)

state = torch.load(ckpt)  # expect: TP107
model.load_state_dict(state["model"])
opt.load_state_dict(state["opt"])
loss = model(torch.randn(2, 4, device=device)).sum()
loss.backward()
opt.step()
