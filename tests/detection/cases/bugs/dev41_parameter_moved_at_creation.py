# source: https://github.com/pytorch/pytorch/issues/20089
# area: device placement
# bug: nn.Parameter(...).to(device) keeps a plain copy on the GPU: the gain is not registered, never trained, not saved
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class GatedMLP(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.gain = nn.Parameter(torch.ones(dim)).to(device)  # expect: TP117

    def forward(self, x):
        return torch.relu(self.fc(x)) * self.gain


model = GatedMLP().to(device)
print("parameters:", [name for name, _ in model.named_parameters()])
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    x = torch.randn(8, 16, device=device)
    loss = (model(x) - x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", round(loss.item(), 4))
