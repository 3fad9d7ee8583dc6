import copy
import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def train(dataset):
    loader = DataLoader(dataset, pin_memory=True)
    model = nn.Linear(4, 3).to(device)
    criterion = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0, 3.0]))
    for x, y in loader:
        logits = model(x.to(device))
        loss = criterion(logits, y)
        picked = torch.gather(logits, 1, torch.randint(0, 3, (4, 1)))
        drop = torch.rand(4, 3) < 0.1
        masked = logits.masked_fill(drop, 0.0)
        padded = torch.cat([logits, torch.zeros(4, 2)], dim=1)
        shifted = logits + torch.from_numpy(np.ones((4, 3), dtype=np.float32))


def never_moved():
    model = nn.Sequential(nn.Linear(4, 2))
    x = torch.randn(8, 4).to(device)
    return model(x)


def fit(model, loader, criterion):
    for x, y in loader:
        criterion(model(x.to(device)), y.to(device)).backward()


def class_weighted(model, loader, counts):
    weights = 1.0 / torch.bincount(counts).float()
    criterion = nn.CrossEntropyLoss(weight=weights)
    fit(model, loader, criterion)


class Averaged:
    def __init__(self, model, decay=0.99):
        self.copy = copy.deepcopy(model)
        self.decay = decay


def with_ema():
    model = nn.Linear(4, 2)
    ema = Averaged(model)
    shadow = copy.deepcopy(model)
    model.to(device)
    return ema, shadow


def accumulated(loader):
    model = nn.Linear(4, 1).to(device)
    running = torch.tensor(0.0)
    for x, y in loader:
        running += model(x.to(device)).sum()
    return running
