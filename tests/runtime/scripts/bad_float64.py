"""float64 NumPy data reaches the GPU."""

import numpy as np
import torch
from torch import nn

model = nn.Linear(4, 2).to("cuda")
data = np.ones((3, 4))
x = torch.from_numpy(data).to("cuda")  # expect: TP302
y = model(x.float())
