import torch
from torch import nn
from torch.utils.data import DataLoader


def train(model, dataset, optimizer):
    loader = DataLoader(dataset)
    criterion = nn.CrossEntropyLoss()
    total = 0.0
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        total += loss.item()
        parts = loss.detach().tolist()
        if total > 3:
            print(loss.item())  # a data-dependent test: runs at most steps
        if len(parts) % 10 == 0:
            pass
        else:
            logged = loss.item()  # the else branch of a periodic test runs most steps
