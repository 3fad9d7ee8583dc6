# source: https://github.com/pytorch/pytorch/issues/135794
# area: transfer & sync
# bug: random inputs are generated on the CPU and copied to the device at every step
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
generator = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8)).to(device)
opt = torch.optim.Adam(generator.parameters(), lr=1e-3)
for step in range(4):
    z = torch.randn(64, 16).to(device)  # expect: TP104
    fake = generator(z)
    loss = fake.pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
