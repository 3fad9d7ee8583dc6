import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(8, 2).to(device)
x = torch.randn(4, 8, device=device).half()
out = model(x)
conv = nn.Conv2d(3, 4, 3)
img = torch.rand(1, 3, 8, 8).to(torch.bfloat16)
feat = conv(img)
