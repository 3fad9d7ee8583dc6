# twin of: bugs/dev17_device_captured_before_to.py
# area: device placement
# correct: the noise follows the input's device at call time
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Denoiser(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(8, 8)

    def forward(self, x):
        noise = torch.randn_like(x)
        return self.net(x + noise)


model = Denoiser().to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for _ in range(3):
    x = torch.randn(4, 8, device=device)
    loss = (model(x) - x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
