import torch
from torch.utils.data import DataLoader


def evaluate(model, dataset, device):
    loader = DataLoader(dataset)
    model.to(device)
    preds = []
    for x, y in loader:
        out = model(x.to(device))
        preds.append(out.argmax(1))
        labels = y.numpy()  # a CPU batch: no device copy
    return torch.cat(preds).cpu()


def train_with_preview(model, dataset, optimizer, device):
    loader = DataLoader(dataset)
    model.to(device)
    preview = None
    for i, (x, y) in enumerate(loader):
        out = model(x.to(device))
        out.sum().backward()
        optimizer.step()
        if i == 0:
            preview = out.detach().cpu()  # once, for a preview
        if (i + 1) % 100 == 0:
            snapshot = out.detach().cpu().numpy()
    return preview
