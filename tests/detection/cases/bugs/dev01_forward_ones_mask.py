# source: https://github.com/FedeClaudi/pyrnn/issues/1
# area: device placement
# bug: a mask made with torch.ones inside forward stays on the CPU while the model is on the GPU
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class GatedNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        gate = torch.ones(x.shape[0], 4)  # expect[gate]: TP103
        return self.fc(x) * gate  # expect[gate]: TP150


model = GatedNet().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x = torch.randn(16, 8, device=device)
    loss = model(x).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("done", float(loss))
