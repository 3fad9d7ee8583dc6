# source: https://github.com/pytorch/pytorch/issues/4588
# area: dtype
# bug: a float64 tensor constant silently promotes the activations to float64 on the GPU
import numpy as np
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.register_buffer("scale", torch.from_numpy(np.linspace(0.5, 2.0, 4)))  # expect[s]: TP301

    def forward(self, x):
        return self.fc(x) * self.scale  # expect[s]: TP350


model = Scaled().to(device)  # expect[s]: TP302
out = model(torch.randn(3, 4, device=device))
print(out.dtype)
