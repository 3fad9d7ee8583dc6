# source: https://github.com/Lightning-AI/pytorch-lightning/issues/3674
# area: device placement
# bug: __init__ stores a one-hot table built by a helper method as a plain attribute
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class JointModel(nn.Module):
    def __init__(self, joints=5):
        super().__init__()
        self.table = self.one_hot(joints)  # expect[t]: TP105
        self.fc = nn.Linear(joints, joints)

    def one_hot(self, n):
        return torch.eye(n)

    def forward(self, x):
        return self.fc(x @ self.table)  # expect[t]: TP150


model = JointModel().to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    loss = model(torch.randn(2, 5, device=device)).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
