# source: https://github.com/JDAI-CV/fast-reid/pull/509
# area: device placement
# bug: `.numpy()` on a tensor that lives on the GPU
import numpy as np
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(16, 8).to(device).eval()
queries = torch.randn(5, 16, device=device)
gallery = torch.randn(7, 16, device=device)
with torch.no_grad():
    distmat = torch.cdist(model(queries), model(gallery))
ranks = np.argsort(distmat.numpy(), axis=1)  # expect: TP108
print(ranks[:, 0])
