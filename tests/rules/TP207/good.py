import time

import torch


def train(model, loader, optimizer):
    for x, y in loader:
        loss = model(x).sum()
        loss.backward()
        optimizer.step()
    torch.cuda.synchronize()
    return time.perf_counter()
