# source: https://github.com/milesial/Pytorch-UNet/issues/93
# area: dtype
# bug: labels stored as float32 in NumPy reach CrossEntropyLoss as float class indices
import numpy as np
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
labels_np = np.array([0, 2, 1, 1, 0, 2], dtype=np.float32)
model = nn.Linear(5, 3).to(device)
criterion = nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(2):
    x = torch.randn(6, 5, device=device)
    y = torch.from_numpy(labels_np).to(device)  # expect[y]: any
    loss = criterion(model(x), y)  # expect[y]: TP304
    opt.zero_grad()
    loss.backward()
    opt.step()
