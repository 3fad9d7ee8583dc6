import torch
from torch import nn


def train(model, loader, optimizer):
    criterion = nn.MSELoss()
    total = 0
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        total += loss
    return total


def train_history(model, loader, optimizer):
    criterion = nn.MSELoss()
    history = []
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        history.append(loss)
    return history


def train_mean(model, loader, optimizer):
    criterion = nn.MSELoss()
    epoch_loss = 0.0
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        epoch_loss += loss / len(loader)
    return epoch_loss
