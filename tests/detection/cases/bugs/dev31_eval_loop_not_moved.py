# source: https://github.com/nshaud/DeepHyperX/issues/54
# area: device placement
# bug: the training loop moves its batches but the validation loop forgets to
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
pin = torch.cuda.is_available()
train_loader = DataLoader(TensorDataset(torch.randn(32, 5), torch.randn(32, 1)), batch_size=8, pin_memory=pin)
val_loader = DataLoader(TensorDataset(torch.randn(16, 5), torch.randn(16, 1)), batch_size=8, pin_memory=pin)
model = nn.Linear(5, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
loss_fn = nn.MSELoss()
for x, y in train_loader:
    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    loss = loss_fn(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
model.eval()
with torch.no_grad():
    total = torch.zeros((), device=device)
    for x, y in val_loader:
        total += loss_fn(model(x), y)  # expect: TP102, TP150
print("val", total.item())
