# source: https://github.com/mo-vic/BezierLaneNet/issues/3
# area: dtype
# bug: a Dataset wraps float64 NumPy rows with torch.tensor, so every batch is float64
import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Rows(Dataset):
    def __init__(self, n=32):
        self.x = np.random.randn(n, 6)
        self.y = np.random.randn(n, 1).astype(np.float32)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return torch.tensor(self.x[i]), torch.tensor(self.y[i])  # expect[d]: TP301


loader = DataLoader(Rows(), batch_size=8, pin_memory=torch.cuda.is_available())
model = nn.Linear(6, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)  # expect[d]: TP302
    loss = nn.functional.mse_loss(model(x), y)  # expect[d]: any
    opt.zero_grad()
    loss.backward()
    opt.step()
