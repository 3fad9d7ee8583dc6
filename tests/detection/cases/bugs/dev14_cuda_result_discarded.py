# source: https://github.com/nshaud/DeepHyperX/issues/54
# area: device placement
# bug: `target.cuda()` result is thrown away, so the loss gets a CPU target
import torch
from torch import nn

use_cuda = torch.cuda.is_available()
model = nn.Linear(3, 1)
if use_cuda:
    model.cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for _ in range(3):
    inputs = torch.randn(5, 3)
    target = torch.randn(5, 1)
    if use_cuda:
        inputs = inputs.cuda()
        target.cuda()  # expect[t]: TP101
    loss = nn.functional.mse_loss(model(inputs), target)  # expect[t]: TP150
    opt.zero_grad()
    loss.backward()
    opt.step()
