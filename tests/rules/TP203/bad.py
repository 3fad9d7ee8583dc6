import torch
from torch.utils.data import DataLoader


def train(model, dataset, device):
    loader = DataLoader(dataset)
    for x, y in loader:
        x = x.pin_memory().to(device, non_blocking=True)
        y = y.pin_memory()
        model(x)
