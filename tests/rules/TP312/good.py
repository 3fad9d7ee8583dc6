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


def train_configured_bf16(model, loader, optimizer, cfg):
    dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16}[cfg.dtype]
    ctx = torch.autocast(device_type="cuda", dtype=dtype)
    for x, y in loader:
        with ctx:
            loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
