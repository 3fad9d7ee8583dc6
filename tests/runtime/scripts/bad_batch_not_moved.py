"""The model is on the GPU, the batch is not."""

import torch
from torch import nn

model = nn.Sequential(nn.Linear(4, 8), nn.ReLU()).to("cuda")
batch = torch.ones(2, 4)
out = model(batch)  # expect: TP150
