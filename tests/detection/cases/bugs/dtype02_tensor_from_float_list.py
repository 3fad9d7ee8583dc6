# source: https://blog.51cto.com/u_16175525/6637440
# area: dtype
# bug: a NumPy array of Python floats is float64, and torch.tensor keeps that dtype
import numpy as np
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
table = np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6], [0.7, 0.8, 0.9], [1.0, 1.1, 1.2]])
model = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 1)).to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for _ in range(3):
    inputs = torch.tensor(table).to(device)  # expect[x]: TP301, TP302
    loss = model(inputs).pow(2).mean()  # expect[x]: any
    opt.zero_grad()
    loss.backward()
    opt.step()
