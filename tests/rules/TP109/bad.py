import torch
from torch import nn

model = nn.Linear(4, 2).cuda()
x = torch.randn(3, 4, device="cuda")
dev = torch.device("cuda")
