# source: https://github.com/Lightning-AI/pytorch-lightning/issues/2585
# area: device placement
# bug: a training_step turns Python labels into a tensor without a device
import torch
import torch.nn.functional as F
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(7, 3)

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch):
        x, labels = batch
        target = torch.tensor(labels)  # expect[t]: any
        return F.cross_entropy(self(x), target)  # expect[t]: TP150


model = Classifier().to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    batch = (torch.randn(4, 7, device=device), [0, 2, 1, 0])
    loss = model.training_step(batch)
    opt.zero_grad()
    loss.backward()
    opt.step()
