# source: https://github.com/nshaud/DeepHyperX/issues/54
# area: device placement
# bug: `x.to(device)` is called as a statement; tensors do not move in place
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Conv2d(1, 4, 3).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
images = torch.randn(8, 1, 12, 12)
for i in range(0, 8, 4):
    x = images[i : i + 4]
    x.to(device)  # expect[x]: TP101
    out = model(x)  # expect[x]: TP150
    loss = out.mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
