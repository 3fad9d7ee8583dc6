import torch


def fetch(x):
    y = x.to("cpu", non_blocking=True)
    print(y.sum())
    z = x.cpu(non_blocking=True)
    return z


def drain(result):
    staging = torch.empty(4, 4, pin_memory=True)
    staging.copy_(result, non_blocking=True)
    return staging.sum()
