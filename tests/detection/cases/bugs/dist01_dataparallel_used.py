# source: https://github.com/pytorch/pytorch/issues/44103
# area: porting & distributed
# bug: nn.DataParallel drives all GPUs from one process; DDP under torchrun is the supported path
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Sequential(nn.Linear(10, 20), nn.ReLU(), nn.Linear(20, 2))
model = nn.DataParallel(model).to(device)  # expect: TP401
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    x = torch.randn(8, 10, device=device)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
