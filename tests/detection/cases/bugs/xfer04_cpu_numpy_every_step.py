# source: https://github.com/pytorch/pytorch/issues/12461
# area: transfer & sync
# bug: outputs are copied to the host with .cpu().numpy() at every training step
import numpy as np
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
history = []
for step in range(5):
    x = torch.randn(8, 4, device=device)
    out = model(x)
    loss = out.pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    history.append(out.detach().cpu().numpy())  # expect: TP205
print(np.concatenate(history).shape)
