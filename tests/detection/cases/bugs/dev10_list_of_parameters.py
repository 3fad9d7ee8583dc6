# source: https://github.com/pytorch/pytorch/issues/29807
# area: device placement
# bug: per-layer scales are nn.Parameters in a plain list, so they are neither moved nor trained
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])
        self.scales = [nn.Parameter(torch.ones(4)) for _ in range(2)]  # expect[scales]: TP106

    def forward(self, x):
        for layer, scale in zip(self.layers, self.scales):
            x = layer(x) * scale  # expect[scales]: TP150
        return x


model = Scaled().to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    loss = model(torch.randn(5, 4, device=device)).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
