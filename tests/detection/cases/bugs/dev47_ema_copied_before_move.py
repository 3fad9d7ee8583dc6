# source: https://github.com/lucidrains/DALLE2-pytorch/issues/87
# area: device placement
# bug: the EMA helper deep-copies the model before the model is moved, so the averaged weights stay on the CPU
import copy

import torch
from torch import nn
from torch.nn import functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class EMA:
    def __init__(self, model, decay=0.9):
        self.shadow = copy.deepcopy(model).eval()
        self.decay = decay

    @torch.no_grad()
    def update(self, model):
        for avg, new in zip(self.shadow.parameters(), model.parameters()):
            avg.mul_(self.decay).add_(new, alpha=1 - self.decay)


model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
ema = EMA(model)  # expect: any
model.to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(5):
    x, y = torch.randn(16, 8, device=device), torch.randint(0, 2, (16,), device=device)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    ema.update(model)
print(f"loss {loss.item():.3f}")
