# source: https://github.com/pytorch/audio/pull/457
# area: device placement
# bug: a coordinate grid from torch.linspace inside forward is concatenated with GPU features
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class CoordConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 2, 1)

    def forward(self, img):
        n, _, h, w = img.shape
        ys = torch.linspace(-1, 1, h).view(1, 1, h, 1).expand(n, 1, h, w)  # expect[g]: TP103
        return self.conv(torch.cat([img, ys], dim=1))  # expect[g]: TP150


model = CoordConv().to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    loss = model(torch.randn(2, 2, 8, 8, device=device)).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
