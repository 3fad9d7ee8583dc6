# twin of: bugs/dev01_forward_ones_mask.py
# area: device placement
# correct: the gate is created on the input's device
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class GatedNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        gate = torch.ones(x.shape[0], 4, device=x.device)
        return self.fc(x) * gate


model = GatedNet().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x = torch.randn(16, 8, device=device)
    loss = model(x).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("done", float(loss))
