# source: https://github.com/pytorch/audio/pull/457
# area: device placement
# bug: per-channel weights are a torch.tensor literal built inside forward on every call
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class ChannelMix(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(3, 3, 3, padding=1)

    def forward(self, x):
        w = torch.tensor([0.2, 0.3, 0.5]).view(1, 3, 1)  # expect[w]: TP103
        return (self.conv(x) * w).sum(dim=1)  # expect[w]: TP150


model = ChannelMix().to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    loss = model(torch.randn(2, 3, 16, device=device)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
