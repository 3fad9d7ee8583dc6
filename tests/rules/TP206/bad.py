import torch
from torch.utils.data import DataLoader


def train(model, dataset, optimizer, device):
    loader = DataLoader(dataset)
    model.to(device)
    for x, y in loader:
        loss = model(x.to(device)).sum()
        loss.backward()
        optimizer.step()
        print(loss)
        if loss:
            break
        value = float(loss)
