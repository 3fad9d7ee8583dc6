# source: https://github.com/deepspeedai/DeepSpeed/pull/5135
# area: transfer & sync
# bug: print(loss) formats a device tensor, which waits for the GPU at every step
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = nn.Sequential(nn.Linear(6, 6), nn.Tanh(), nn.Linear(6, 1)).to(device)
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
for step in range(4):
    x = torch.randn(16, 6, device=device)
    loss = net(x).abs().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, loss)  # expect: TP206
