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


def train_logged(model, dataset, optimizer, log_interval=10):
    loader = DataLoader(dataset)
    criterion = nn.CrossEntropyLoss()
    for batch_idx, (x, y) in enumerate(loader):
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        # syncs that run once every N steps, or once: what we tell users to do
        if batch_idx % log_interval == 0:
            print(f"{batch_idx} {loss.item():.4f}")
        if not batch_idx % log_interval and batch_idx > 0:
            print(loss.item())
        if batch_idx == len(loader) - 1:
            last = loss.item()
        first = loss.item() if batch_idx == 0 else None


def train_amp_logging(model, optimizer, loader, criterion, log_every=100):
    scaler = torch.amp.GradScaler("cuda")
    for step, (x, y) in enumerate(loader):
        with torch.autocast("cuda", dtype=torch.float16):
            loss = criterion(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        if step % log_every == 0:
            print(scaler.get_scale())
