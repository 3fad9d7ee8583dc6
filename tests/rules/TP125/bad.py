import numpy as np
import torch
from torch import nn


def to_torch(data, device="cpu"):
    if isinstance(data, np.ndarray):
        data = torch.from_numpy(data)
    return data.to(device)


def fresh_head(width, classes, device=torch.device("cpu")):
    return nn.Linear(width, classes, device=device)


class Blender:
    def __init__(self, shape, device):
        self.acc = torch.zeros(shape, device=device)

    def add(self, pred):
        self.acc += to_torch(pred)


class Finetuner:
    def __init__(self, model, classes):
        self.device = torch.device("cuda")
        self.model = model.to(self.device)
        self.model.fc = fresh_head(self.model.fc.in_features, classes)
