import torch


def fetch(x):
    y = x.to("cpu", non_blocking=True)
    print(y.sum())
    z = x.cpu(non_blocking=True)
    return z
