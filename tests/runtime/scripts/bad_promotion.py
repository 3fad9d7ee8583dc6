"""float32 per-sample losses times float64 weights: the loss silently becomes float64."""

import numpy as np
import torch

per_sample = torch.ones(8)
weights = torch.from_numpy(np.full(8, 0.5))
loss = (per_sample * weights).mean()  # expect: TP350
