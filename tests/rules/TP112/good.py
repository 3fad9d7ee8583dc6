import torch

a = torch.empty(3, 4)
b = torch.tensor([1.0, 2.0], dtype=torch.float32)


def check(x):
    return isinstance(x, torch.Tensor)
