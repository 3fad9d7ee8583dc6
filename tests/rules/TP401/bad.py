import torch
from torch import nn

model = nn.DataParallel(nn.Linear(4, 2))
