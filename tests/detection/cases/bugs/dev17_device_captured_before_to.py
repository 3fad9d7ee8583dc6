# source: https://github.com/Lightning-AI/pytorch-lightning/issues/1110
# area: device placement
# bug: the module records its device in __init__ (the CPU) and keeps using it after .to(device)
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Denoiser(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(8, 8)
        self.device = next(self.net.parameters()).device

    def forward(self, x):
        noise = torch.randn(x.shape, device=self.device)  # expect[dev]: any
        return self.net(x + noise)  # expect[dev]: TP150


model = Denoiser().to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for _ in range(3):
    x = torch.randn(4, 8, device=device)
    loss = (model(x) - x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
