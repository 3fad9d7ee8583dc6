import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2)
model.to(device)
model.float()
x = torch.randn(8, 4)
x = x.to(device)
out = model(x)
batch.to(device)  # unknown name: stay silent
