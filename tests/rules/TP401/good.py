import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

model = DDP(nn.Linear(4, 2))
