# twin of: bugs/dtype01_numpy_float64_input.py
# area: dtype
# correct: the NumPy features are converted to float32
import numpy as np
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
features = np.random.rand(32, 4)
targets = np.random.rand(32, 1).astype(np.float32)
x = torch.from_numpy(features).float().to(device)
y = torch.from_numpy(targets).to(device)
model = nn.Linear(4, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
