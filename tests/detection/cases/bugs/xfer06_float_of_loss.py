# source: https://github.com/meta-pytorch/torchtune/pull/522
# area: transfer & sync
# bug: float(loss) converts the device loss to Python at every step
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def run_epoch(model, loader, opt):
    total = 0.0
    for x, y in loader:
        x = x.to(device, non_blocking=True)
        y = y.to(device, non_blocking=True)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += float(loss)  # expect: TP206
    return total


model = nn.Linear(5, 3).to(device)
data = TensorDataset(torch.randn(30, 5), torch.randint(0, 3, (30,)))
loader = DataLoader(data, batch_size=10, pin_memory=torch.cuda.is_available())
print(run_epoch(model, loader, torch.optim.SGD(model.parameters(), lr=0.1)))
