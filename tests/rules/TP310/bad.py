import torch


def train(model, loader, optimizer):
    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        loss = model(x).sum()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
