# source: https://github.com/pytorch/pytorch/issues/44103
# area: transfer & sync
# bug: correct predictions are counted with .item() for every batch
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
loader = DataLoader(
    TensorDataset(torch.randn(60, 4), torch.randint(0, 2, (60,))),
    batch_size=15,
    pin_memory=torch.cuda.is_available(),
)
model = nn.Linear(4, 2).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
correct = 0
for x, y in loader:
    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    logits = model(x)
    loss = nn.functional.cross_entropy(logits, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    correct += (logits.argmax(1) == y).sum().item()  # expect: TP204
print(correct / 60)
