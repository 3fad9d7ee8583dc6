# source: https://github.com/pytorch/pytorch/issues/42539
# area: transfer & sync
# bug: non_blocking=True on batches from an unpinned loader: the copies stay synchronous
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
data = TensorDataset(torch.randn(64, 20), torch.randint(0, 4, (64,)))
loader = DataLoader(data, batch_size=16, shuffle=True)  # expect[p]: TP201
model = nn.Linear(20, 4).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    x = x.to(device, non_blocking=True)  # expect[p]: TP251
    y = y.to(device, non_blocking=True)
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
