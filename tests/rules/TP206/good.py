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
