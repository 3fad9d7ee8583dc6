import torch
from torch import nn

fc = nn.Linear(4, 2)
ids = torch.randint(0, 10, (8, 4))
out = fc(ids)
counts = torch.tensor([[1, 2, 3, 4]])
fc(counts.long())
inline = nn.Linear(2, 1)(torch.ones(1, 2, dtype=torch.int64))
