"""float16 overflow: 60000 squared is inf in half precision (run with --check-finite)."""

import torch

x = torch.full((4,), 60000.0, dtype=torch.float16)
y = x * x  # expect: TP351
z = y - y
