import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
x = torch.randn(3, 4).to(device)
preds = model(x).argmax(1).cpu().numpy()
arr = x.detach().cpu().numpy()
