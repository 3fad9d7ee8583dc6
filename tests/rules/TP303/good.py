import torch
from torch import nn

fc = nn.Linear(4, 2)
emb = nn.Embedding(10, 4)
ids = torch.randint(0, 10, (8, 4))
out = fc(emb(ids).sum(1))
fc(ids.float())
