import numpy as np
import torch

x = torch.from_numpy(np.random.rand(64, 20))
data = np.zeros((4, 4))
t = torch.tensor(data)
rng = np.random.default_rng(0)
u = torch.as_tensor(rng.standard_normal(10))
w = torch.tensor(np.array([0.5, 1.5]))
