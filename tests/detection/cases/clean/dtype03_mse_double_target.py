# twin of: bugs/dtype03_mse_double_target.py
# area: dtype
# correct: the target is created as float32
import numpy as np
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(2, 1).to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
criterion = nn.MSELoss()
for _ in range(3):
    x = torch.randn(16, 2, device=device)
    y = torch.from_numpy(np.random.randn(16, 1).astype(np.float32)).to(device)
    loss = criterion(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
