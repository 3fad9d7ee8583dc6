# twin of: bugs/dtype04_cross_entropy_float_target.py
# area: dtype
# correct: CrossEntropyLoss gets int64 class indices
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(6, 4).to(device)
criterion = nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    x = torch.randn(10, 6, device=device)
    labels = torch.randint(0, 4, (10,), device=device)
    loss = criterion(model(x), labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
