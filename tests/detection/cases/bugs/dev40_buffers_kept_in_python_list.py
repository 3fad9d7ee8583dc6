# source: https://github.com/pytorch/pytorch/issues/29807
# area: device placement
# bug: registered buffers are also kept in a Python list, and forward reads the stale CPU copies
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Prototypes(nn.Module):
    def __init__(self, k=3, dim=4):
        super().__init__()
        self.protos = []
        for i in range(k):
            self.register_buffer(f"proto_{i}", torch.randn(dim))
            self.protos.append(getattr(self, f"proto_{i}"))  # expect[p]: any

    def forward(self, x):
        return torch.stack([(x - p).pow(2).sum(1) for p in self.protos], dim=1)  # expect[p]: TP150


model = Prototypes().to(device)
x = torch.randn(6, 4, device=device)
print(model(x).argmin(dim=1))
