import torch
from torch import nn

fc = nn.Linear(4, 2)
ids = torch.randint(0, 10, (8, 4))
out = fc(ids)
counts = torch.tensor([[1, 2, 3, 4]])
fc(counts.long())
