import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader


def train(dataset, device):
    loader = DataLoader(dataset, batch_size=32)
    model = nn.Linear(20, 2).to(device)
    for x, y in loader:
        out = model(x)
    probe = torch.zeros(1, 20)
    model(probe)
    data = torch.from_numpy(np.ones((3, 20), dtype=np.float32))
    return model(data)
