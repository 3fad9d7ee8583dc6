"""Integer indices fed to a Linear layer."""

import contextlib

import torch
from torch import nn

layer = nn.Linear(4, 2)
tokens = torch.randint(0, 10, (3, 4))
with contextlib.suppress(RuntimeError):
    layer(tokens)  # expect: TP303
