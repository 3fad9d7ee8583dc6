import torch
from torch import nn


def finetune(model, batches, device):
    dtype = torch.float16 if device.type == "cuda" else torch.float32
    model = model.to(device=device, dtype=dtype)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)  # the default eps, 1e-8
    for x in batches:
        model(x.to(device, dtype)).float().pow(2).mean().backward()
        optimizer.step()


def half_rmsprop(net: nn.Module):
    net = net.half()
    return torch.optim.RMSprop(net.parameters(), eps=1e-9)
