# source: https://github.com/orcax/PGPR/issues/8
# area: device placement
# bug: labels converted from NumPy each step are left on the CPU
import numpy as np
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
rng = np.random.default_rng(0)
features = rng.standard_normal((40, 3)).astype(np.float32)
labels = rng.integers(0, 2, size=40)
model = nn.Linear(3, 2).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
criterion = nn.CrossEntropyLoss()
for i in range(0, 40, 10):
    x = torch.from_numpy(features[i : i + 10]).to(device)
    y = torch.from_numpy(labels[i : i + 10])
    loss = criterion(model(x), y)  # expect: TP102, TP150
    opt.zero_grad()
    loss.backward()
    opt.step()
