"""Mixed precision written for the CPU: bfloat16 autocast around the forward pass and loss."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class ResidualMLP(nn.Module):
    def __init__(self, dim=32, depth=2):
        super().__init__()
        self.inp = nn.Linear(8, dim)
        self.blocks = nn.ModuleList(
            [nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, dim), nn.GELU()) for _ in range(depth)]
        )
        self.out = nn.Linear(dim, 4)

    def forward(self, x):
        h = self.inp(x)
        for block in self.blocks:
            h = h + block(h)
        return self.out(h)


def main():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(192, 8, generator=g)
    y = (x[:, :4] * x[:, 4:]).argmax(dim=1)
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    model = ResidualMLP()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for epoch in range(3):
        for xb, yb in loader:
            optimizer.zero_grad()
            with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
                logits = model(xb)
                loss = F.cross_entropy(logits, yb)
            loss.backward()
            optimizer.step()
    with torch.no_grad():
        final = F.cross_entropy(model(x), y)
    print(f"final loss {final.item():.8f}")


if __name__ == "__main__":
    main()
