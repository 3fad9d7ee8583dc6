# source: https://github.com/Lightning-AI/pytorch-lightning/issues/5272
# area: porting & distributed
# bug: the port keeps a hard-coded CPU device, so the model silently never uses the GPU
import torch
from torch import nn

device = torch.device("cpu")  # expect[c]: any
print("cuda available:", torch.cuda.is_available())
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(20):
    x = torch.randn(64, 32, device=device)
    loss = model(x).logsumexp(1).mean()  # expect[c]: TP151
    opt.zero_grad()
    loss.backward()
    opt.step()
