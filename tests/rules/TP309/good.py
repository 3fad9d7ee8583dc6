import torch


def train(model, loader, device):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        loss = model(x).sum()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()


def plain(model, loader):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        model(x).sum().backward()
        optimizer.step()
