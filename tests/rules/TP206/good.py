import torch
from torch.utils.data import DataLoader


def train(model, dataset, optimizer, device):
    loader = DataLoader(dataset)
    model.to(device)
    for step, (x, y) in enumerate(loader):
        loss = model(x.to(device)).sum()
        loss.backward()
        optimizer.step()
        count = int(step)
        label = int(y[0])  # a CPU batch
    print(loss)


def train_logged(model, dataset, optimizer, device, every=10):
    loader = DataLoader(dataset)
    model.to(device)
    for step, (x, y) in enumerate(loader):
        loss = model(x.to(device)).sum()
        loss.backward()
        optimizer.step()
        if step % every == 0:
            print(f"{step}: {loss:.4f}")  # once every `every` steps
            if loss < 0.01:
                break
        if y is None or step in (1, 2):
            continue
