# twin of: bugs/dev15_class_weight_on_cpu.py
# area: device placement
# correct: the class weights are created on the device
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 3).to(device)
weights = torch.tensor([1.0, 2.0, 4.0], device=device)
criterion = nn.CrossEntropyLoss(weight=weights)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    x = torch.randn(9, 4, device=device)
    y = torch.randint(0, 3, (9,), device=device)
    loss = criterion(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
