# source: https://github.com/pytorch/tutorials/pull/2983
# area: transfer & sync
# bug: each batch is pinned on the training thread right before the copy
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
use_cuda = torch.cuda.is_available()
loader = DataLoader(TensorDataset(torch.randn(48, 12), torch.randn(48, 1)), batch_size=12)  # expect[p]: TP201
model = nn.Linear(12, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for x, y in loader:
    if use_cuda:
        x = x.pin_memory()  # expect[p]: TP203
    x = x.to(device, non_blocking=True)
    y = y.to(device)
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
