import numpy as np
import torch

x = torch.from_numpy(np.random.rand(64, 20)).float()
data = np.zeros((4, 4), dtype=np.float32)
t = torch.tensor(data)
labels = torch.from_numpy(np.array([1, 2, 3]))
v = torch.tensor(np.random.rand(3), dtype=torch.float32)
y = torch.from_numpy(np.random.rand(5))
y = y.float()
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
moved = torch.from_numpy(np.random.rand(8, 3)).to(device, torch.float32)
cast = torch.from_numpy(np.random.rand(8, 3)).to(device=device, dtype=torch.float32)
z = torch.tensor(np.random.randn(4))
z = z.to(torch.float32)
