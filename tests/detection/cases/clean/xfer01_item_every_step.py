# twin of: bugs/xfer01_item_every_step.py
# area: transfer & sync
# correct: the loss is read on the host only every log_interval steps
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
log_interval = 2
for batch_idx, (x, y) in enumerate(loader):
    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if batch_idx % log_interval == 0:
        print(f"batch {batch_idx} loss {loss.item():.4f}")
