import torch
from torch.utils.data import DataLoader


def train(model, dataset, optimizer, device):
    loader = DataLoader(dataset, batch_size=32, pin_memory=True)
    model.to(device)
    for x, y in loader:
        x = x.to(device, non_blocking=True)
        y = y.cuda(non_blocking=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
