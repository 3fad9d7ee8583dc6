# twin of: bugs/dev19_numpy_of_device_tensor.py
# area: device placement
# correct: the distance matrix is copied to the host once before NumPy takes over
import numpy as np
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(16, 8).to(device).eval()
queries = torch.randn(5, 16, device=device)
gallery = torch.randn(7, 16, device=device)
with torch.no_grad():
    distmat = torch.cdist(model(queries), model(gallery))
ranks = np.argsort(distmat.cpu().numpy(), axis=1)
print(ranks[:, 0])
