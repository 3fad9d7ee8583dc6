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


def train_amp(model, optimizer, loader, criterion):
    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = criterion(model(x), y)
        scaler.scale(loss).backward()
        before = scaler.get_scale()
        scaler.step(optimizer)
        scaler.update()
        skipped = scaler.get_scale() < before


class GradWatch:
    def __init__(self, model):
        self.bad = []
        for name, p in model.named_parameters():
            p.register_hook(self._make_hook(name))

    def _make_hook(self, name):
        def hook(grad):
            if not torch.isfinite(grad).all().item():  # at every backward, for every parameter
                self.bad.append(name)
            return grad

        return hook

