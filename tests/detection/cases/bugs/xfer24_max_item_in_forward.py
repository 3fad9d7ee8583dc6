# source: https://github.com/whittle-org/whittle/issues/306
# area: transfer & sync
# bug: forward reads lengths.max().item() to size a buffer, a host sync per call
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Pooler(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x, lengths):
        longest = int(lengths.max().item())  # expect: TP204
        return self.proj(x[:, :longest]).mean(dim=1)


model = Pooler().to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    x = torch.randn(3, 8, 4, device=device)
    lengths = torch.tensor([8, 5, 3], device=device)
    loss = model(x, lengths).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
