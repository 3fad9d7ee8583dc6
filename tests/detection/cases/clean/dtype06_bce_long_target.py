# twin of: bugs/dtype06_bce_long_target.py
# area: dtype
# correct: BCEWithLogitsLoss gets float targets
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(3, 1).to(device)
criterion = nn.BCEWithLogitsLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    x = torch.randn(8, 3, device=device)
    y = torch.randint(0, 2, (8, 1), device=device).float()
    loss = criterion(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
