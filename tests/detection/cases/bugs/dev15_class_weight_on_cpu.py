# source: https://github.com/mahmoodlab/MIL-Lab/issues/4
# area: device placement
# bug: class weights for CrossEntropyLoss are built on the CPU and the criterion is never moved
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 3).to(device)
weights = torch.tensor([1.0, 2.0, 4.0])  # expect[w]: any
criterion = nn.CrossEntropyLoss(weight=weights)  # expect[w]: any
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    x = torch.randn(9, 4, device=device)
    y = torch.randint(0, 3, (9,), device=device)
    loss = criterion(model(x), y)  # expect[w]: TP150
    opt.zero_grad()
    loss.backward()
    opt.step()
