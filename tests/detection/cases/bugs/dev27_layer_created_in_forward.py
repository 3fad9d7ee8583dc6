# source: http://www.kouhan.cn/en/article/00014955
# area: device placement
# bug: a projection layer is created inside forward, so its weights are on the CPU (and untrained)
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Adapter(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(12, 6)

    def forward(self, x):
        proj = nn.Linear(6, 2)  # expect[p]: any
        return proj(torch.relu(self.body(x)))  # expect[p]: TP150


model = Adapter().to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    loss = model(torch.randn(3, 12, device=device)).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
