# source: https://github.com/rosinality/style-based-gan-pytorch/pull/50
# area: transfer & sync
# bug: loss.item() at every step forces a GPU sync per batch just to keep a running total
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
loader = DataLoader(
    TensorDataset(torch.randn(64, 8), torch.randn(64, 1)),
    batch_size=16,
    pin_memory=torch.cuda.is_available(),
)
model = nn.Linear(8, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
running = 0.0
for x, y in loader:
    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    running += loss.item()  # expect: TP204
print(running / len(loader))
