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
        if loss < 0.01:
            break
        assert not torch.isnan(loss).any()
        message = f"loss {loss:.4f}"
        while loss > 100:
            loss = loss / 2
