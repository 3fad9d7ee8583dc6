"""float64 NumPy data fed straight into a float32 model."""

import contextlib

import numpy as np
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
features = torch.from_numpy(np.ones((3, 4))).to(device)
with contextlib.suppress(RuntimeError):
    model(features)  # expect: TP302
