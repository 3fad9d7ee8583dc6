# source: https://github.com/Lightning-AI/torchmetrics/issues/392
# area: device placement
# bug: forward replaces a registered buffer with a fresh CPU tensor instead of updating it in place
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class RunningMean(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.register_buffer("count", torch.zeros(()))
        self.register_buffer("mean", torch.zeros(dim))
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        if self.count.item() == 0:
            self.mean = torch.zeros(x.shape[1])  # expect[b]: TP103
        self.mean = 0.9 * self.mean + 0.1 * x.mean(0).detach()  # expect[b]: TP150
        self.count += 1
        return self.fc(x - self.mean)


model = RunningMean(4).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    loss = model(torch.randn(6, 4, device=device)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
