# twin of: bugs/dev34_tensor_literal_in_forward.py
# area: device placement
# correct: a 0-dim CPU scalar tensor may be combined with GPU tensors (no copy, no sync)
import math

import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class ScaledAttention(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.dim = dim
        self.qk = nn.Linear(dim, 2 * dim)

    def forward(self, x):
        q, k = self.qk(x).chunk(2, dim=-1)
        scale = torch.tensor(math.sqrt(self.dim))
        return (q @ k.transpose(1, 2)) / scale


model = ScaledAttention().to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    loss = model(torch.randn(2, 5, 8, device=device)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
