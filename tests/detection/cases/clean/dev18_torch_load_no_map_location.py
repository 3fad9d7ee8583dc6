# twin of: bugs/dev18_torch_load_no_map_location.py
# area: device placement
# correct: the checkpoint is read with map_location, so it loads anywhere
import os
import tempfile

import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
path = os.path.join(tempfile.mkdtemp(), "ckpt.pt")
torch.save({"model": model.state_dict(), "step": 10}, path)

restored = nn.Linear(4, 2)
state = torch.load(path, map_location="cpu")
restored.load_state_dict(state["model"])
print(restored(torch.randn(1, 4)).shape)
