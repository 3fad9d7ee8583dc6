# source: https://github.com/qubvel-org/segmentation_models.pytorch/issues/197
# area: dtype
# bug: class-index labels cast with .float() before CrossEntropyLoss (it needs int64 indices)
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(6, 4).to(device)
criterion = nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    x = torch.randn(10, 6, device=device)
    labels = torch.randint(0, 4, (10,), device=device)
    loss = criterion(model(x), labels.float())  # expect: TP304
    opt.zero_grad()
    loss.backward()
    opt.step()
