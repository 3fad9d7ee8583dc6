import numpy as np
import torch

x = torch.from_numpy(np.random.rand(64, 20))
data = np.zeros((4, 4))
t = torch.tensor(data)
rng = np.random.default_rng(0)
u = torch.as_tensor(rng.standard_normal(10))
w = torch.tensor(np.array([0.5, 1.5]))
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
moved = torch.from_numpy(np.random.rand(8, 3)).to(device)  # .to(device) keeps float64
z = torch.tensor(np.random.randn(4))
z = z.to(device)
