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
