# source: https://openillumi.com/en/en-fix-mat1-mat2-dtype-error-pytorch
# area: dtype
# bug: features from NumPy are float64; the Linear layer is float32
import numpy as np
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
features = np.random.rand(32, 4)
targets = np.random.rand(32, 1).astype(np.float32)
x = torch.from_numpy(features).to(device)  # expect[x]: TP301, TP302
y = torch.from_numpy(targets).to(device)
model = nn.Linear(4, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    loss = nn.functional.mse_loss(model(x), y)  # expect[x]: any
    opt.zero_grad()
    loss.backward()
    opt.step()
