# source: https://github.com/pytorch/pytorch/issues/9139
# area: device placement
# bug: a checkpoint written from GPU tensors is read back without map_location
import os
import tempfile

import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
path = os.path.join(tempfile.mkdtemp(), "ckpt.pt")
torch.save({"model": model.state_dict(), "step": 10}, path)

restored = nn.Linear(4, 2)
state = torch.load(path)  # expect: TP107
restored.load_state_dict(state["model"])
print(restored(torch.randn(1, 4)).shape)
