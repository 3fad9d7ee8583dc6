import torch
from torch import nn

bce = nn.BCEWithLogitsLoss()
logits = torch.randn(8)
labels = torch.randint(0, 2, (8,))
loss = bce(logits, labels.float())
ce = nn.CrossEntropyLoss()
soft = torch.softmax(torch.randn(8, 4), 1)
loss2 = ce(torch.randn(8, 4), soft)
loss3 = ce(torch.randn(8, 4), labels)
