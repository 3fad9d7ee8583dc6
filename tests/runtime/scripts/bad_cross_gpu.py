"""Two GPUs: the model on cuda:0, a batch on cuda:1 (run with --simulate cuda:2)."""

import torch
from torch import nn

model = nn.Linear(4, 2).to("cuda:0")
x = torch.ones(3, 4).to("cuda:1")
y = model(x)  # expect: TP150
