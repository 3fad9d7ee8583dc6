import torch
from torch import nn
from torch.utils.data import DataLoader


def train(model, dataset, optimizer):
    loader = DataLoader(dataset)
    criterion = nn.CrossEntropyLoss()
    total = torch.zeros(())
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        total += loss.detach()
        ids = y.tolist()  # a CPU batch: no GPU sync
    print(total.item())
    values = {"a": 1}
    for key in values:
        values.items()
