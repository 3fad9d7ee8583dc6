"""Training and evaluation loops, and a distance metric on predictions."""

import torch


def mean_distance(preds, targets):
    return (preds - targets).norm(dim=1).mean().item()


def train_one_epoch(model, loader, criterion, optimizer):
    model.train()
    for images, targets in loader:
        optimizer.zero_grad()
        loss = criterion(model(images), targets)
        loss.backward()
        optimizer.step()
    return loss.item()


def evaluate(model, loader, criterion):
    model.eval()
    preds, targets = [], []
    with torch.no_grad():
        for images, target in loader:
            preds.append(model(images))
            targets.append(target)
    preds, targets = torch.cat(preds), torch.cat(targets)
    return criterion(preds, targets).item(), mean_distance(preds, targets)
