import torch
from torch import nn

model = nn.Linear(4, 2)
scaler = torch.amp.GradScaler("cuda")
x = torch.randn(3).half()
