import torch
from torch import nn


def train(model, loader, optimizer):
    criterion = nn.MSELoss()
    total = 0
    count = 0
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        total += loss.detach()
        count += 1
    return total / count


def train_history(model, loader, optimizer):
    criterion = nn.MSELoss()
    history = []
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        history.append(loss.detach())
    return history


def train_micro_batches(model, chunks, y, optimizer):
    criterion = nn.MSELoss()
    for batch in chunks:
        losses = []
        for x in batch:
            loss = criterion(model(x), y)
            losses.append(loss)  # kept on purpose: one backward over all of them
        torch.stack(losses).sum().backward()
        optimizer.step()


def train_mean(model, loader, optimizer):
    criterion = nn.MSELoss()
    epoch_loss = 0.0
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        epoch_loss += loss.detach() * x.size(0)
    return epoch_loss
