# source: https://github.com/mahmoodlab/MIL-Lab/issues/4
# area: device placement
# bug: a module-level helper builds the causal mask on the CPU; forward uses it with GPU scores
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def causal_mask(n):
    return torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)  # expect[mask]: TP103


class TinyAttention(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(1, 2) / 4.0
        scores = scores.masked_fill(causal_mask(x.shape[1]), float("-inf"))  # expect[mask]: TP150
        return scores.softmax(-1) @ v


model = TinyAttention().to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for _ in range(3):
    x = torch.randn(2, 6, 16, device=device)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
