import torch


def train(model, loader, optimizer, device):
    for x, y in loader:
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
            loss = (model(x) - y).pow(2).mean()
        loss.backward()
        optimizer.step()


def evaluate(model, loader, device):
    with torch.no_grad(), torch.autocast(device_type="cuda", dtype=torch.float16):
        return [model(x) for x, _ in loader]  # inference: no gradients to underflow


def train_cpu(model, loader, optimizer):
    for x, y in loader:
        with torch.autocast("cpu"):
            loss = (model(x) - y).pow(2).mean()
        loss.backward()
        optimizer.step()
