import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Head(nn.Module):
    def __init__(self, levels):
        super().__init__()
        self.conv = nn.Conv2d(8, 8, 1)
        self.grid = [torch.empty(0) for _ in range(levels)]

    def _make_grid(self, nx, ny):
        ys, xs = torch.meshgrid(torch.arange(ny, device=device), torch.arange(nx, device=device), indexing="ij")
        return torch.stack((xs, ys), -1).float()

    def forward(self, x, i):
        ny, nx = x.shape[-2:]
        stale = self.grid[i].shape[:2] != (ny, nx) or self.grid[i].device != x.device
        if stale:
            self.grid[i] = self._make_grid(nx, ny).to(x.device)
        return self.conv(x) + self.grid[i].sum()


class Anchors(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        self.sizes = sizes
        self.register_buffer("cell", torch.empty(0), persistent=False)

    def forward(self, feature):
        if self.cell.numel():
            return self.cell
        self.cell = torch.as_tensor(self.sizes, device=feature.device)
        return self.cell


head = Head(2).to(device)
anchors = Anchors([8, 16]).to(device)
