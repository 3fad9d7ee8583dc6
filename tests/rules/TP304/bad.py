import torch
from torch import nn
import torch.nn.functional as F

bce = nn.BCEWithLogitsLoss()
logits = torch.randn(8)
labels = torch.randint(0, 2, (8,))
loss = bce(logits, labels)
ce = nn.CrossEntropyLoss()
y = torch.randint(0, 4, (8,))
loss2 = ce(torch.randn(8, 4), y.float())
loss3 = F.binary_cross_entropy_with_logits(logits, labels.long())
