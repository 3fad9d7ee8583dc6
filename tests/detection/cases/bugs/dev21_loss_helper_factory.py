# source: https://github.com/mahmoodlab/MIL-Lab/issues/4
# area: device placement
# bug: a custom loss function allocates per-sample weights with torch.ones on the CPU
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def weighted_mse(pred, target):
    weights = torch.ones(pred.shape[0])  # expect[w]: any
    weights[: pred.shape[0] // 2] = 2.0
    return (weights * (pred - target).pow(2).mean(dim=1)).mean()  # expect[w]: TP150


model = nn.Linear(3, 2).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    x = torch.randn(8, 3, device=device)
    y = torch.randn(8, 2, device=device)
    loss = weighted_mse(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
