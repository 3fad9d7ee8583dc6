import torch
from torch.utils.data import DataLoader

loader = DataLoader(range(10), batch_size=4, num_workers=2, pin_memory=torch.cuda.is_available())


def train(model, dataset, optimizer, device):
    model.to(device)
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = model(x).sum()
        loss.backward()
        optimizer.step()
