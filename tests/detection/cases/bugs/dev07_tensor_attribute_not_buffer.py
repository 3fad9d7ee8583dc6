# source: https://github.com/meta-pytorch/botorch/pull/1035
# area: device placement
# bug: normalisation statistics are plain tensor attributes, so model.to(device) leaves them behind
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Normalized(nn.Module):
    def __init__(self, mean, std):
        super().__init__()
        self.mean = torch.tensor(mean)  # expect[stats]: TP105
        self.std = torch.tensor(std)  # expect[stats]: TP105
        self.fc = nn.Linear(3, 1)

    def forward(self, x):
        return self.fc((x - self.mean) / self.std)  # expect[stats]: TP150


model = Normalized([0.5, 0.4, 0.3], [0.2, 0.2, 0.2]).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    x = torch.rand(16, 3, device=device)
    loss = (model(x) - 1).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
