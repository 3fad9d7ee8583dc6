# twin of: bugs/dev08_plain_list_of_layers.py
# area: device placement
# correct: the blocks live in an nn.ModuleList
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Stack(nn.Module):
    def __init__(self, depth=3, width=8):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(width, width) for _ in range(depth)])
        self.head = nn.Linear(width, 1)

    def forward(self, x):
        for block in self.blocks:
            x = torch.relu(block(x))
        return self.head(x)


model = Stack().to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for _ in range(3):
    x = torch.randn(4, 8, device=device)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
