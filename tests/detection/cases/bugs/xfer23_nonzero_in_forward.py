# source: https://github.com/pytorch/pytorch/issues/12461
# area: transfer & sync
# bug: boolean-mask indexing in forward has a data-dependent size, so it syncs on every call
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class SparseHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.score = nn.Linear(6, 1)
        self.out = nn.Linear(6, 2)

    def forward(self, x):
        keep = self.score(x).squeeze(1) > 0
        picked = x[keep]  # expect: any
        return self.out(picked).sum(0)


model = SparseHead().to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(4):
    loss = model(torch.randn(16, 6, device=device)).pow(2).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
