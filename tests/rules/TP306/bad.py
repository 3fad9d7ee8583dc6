import torch
from torch import nn

model = nn.Linear(4, 2).half()
scaler = torch.amp.GradScaler("cuda")
