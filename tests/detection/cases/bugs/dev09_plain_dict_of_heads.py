# source: https://github.com/pytorch/pytorch/issues/43815
# area: device placement
# bug: task heads stored in a plain dict stay on the CPU when the model moves
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class MultiTask(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Linear(10, 16)
        self.heads = {"age": nn.Linear(16, 1), "kind": nn.Linear(16, 3)}  # expect[heads]: TP106

    def forward(self, x):
        h = torch.relu(self.trunk(x))
        return {name: head(h) for name, head in self.heads.items()}  # expect[heads]: TP150


def train():
    model = MultiTask().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for _ in range(3):
        x = torch.randn(6, 10, device=device)
        out = model(x)
        loss = out["age"].pow(2).mean() + out["kind"].logsumexp(1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


train()
