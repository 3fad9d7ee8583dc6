# twin of: bugs/dev07_tensor_attribute_not_buffer.py
# area: device placement
# correct: the statistics are registered buffers, so .to(device) moves them
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Normalized(nn.Module):
    def __init__(self, mean, std):
        super().__init__()
        self.register_buffer("mean", torch.tensor(mean))
        self.register_buffer("std", torch.tensor(std))
        self.fc = nn.Linear(3, 1)

    def forward(self, x):
        return self.fc((x - self.mean) / self.std)


model = Normalized([0.5, 0.4, 0.3], [0.2, 0.2, 0.2]).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    x = torch.rand(16, 3, device=device)
    loss = (model(x) - 1).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
