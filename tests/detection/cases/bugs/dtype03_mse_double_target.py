# source: https://github.com/pytorch/pytorch/issues/36553
# area: dtype
# bug: the regression target is float64 (from NumPy); MSELoss backward fails with Double vs Float
import numpy as np
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(2, 1).to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
criterion = nn.MSELoss()
for _ in range(3):
    x = torch.randn(16, 2, device=device)
    y = torch.from_numpy(np.random.randn(16, 1)).to(device)  # expect[y]: TP301, TP302
    loss = criterion(model(x), y)
    opt.zero_grad()
    loss.backward()  # expect[y]: any
    opt.step()
