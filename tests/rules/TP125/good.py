import numpy as np
import torch
from torch import nn


def to_torch(data, device="cpu"):
    if isinstance(data, np.ndarray):
        data = torch.from_numpy(data)
    return data.to(device)


def fresh_head(width, classes, device=torch.device("cpu")):
    return nn.Linear(width, classes, device=device)


def load_weights(path, device="cpu"):
    return torch.load(path, map_location=device)  # loading on the CPU first is a choice


class Blender:
    def __init__(self, shape, device):
        self.acc = torch.zeros(shape, device=device)

    def add(self, pred):
        self.acc += to_torch(pred, device=self.acc.device)


class Finetuner:
    def __init__(self, model, classes, path):
        self.device = torch.device("cuda")
        self.model = model.to(self.device)
        self.model.fc = fresh_head(self.model.fc.in_features, classes, self.device)
        self.model.load_state_dict(load_weights(path))


def summarize(values):
    # no device anywhere here: the CPU is what this code works with
    return to_torch(np.asarray(values)).mean()
