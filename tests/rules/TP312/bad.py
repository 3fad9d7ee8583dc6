import torch


def train(model, loader, optimizer, device):
    for x, y in loader:
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            loss = (model(x) - y).pow(2).mean()
        loss.backward()
        optimizer.step()


def train_default(model, loader, optimizer, device):
    for x, y in loader:
        with torch.autocast(device_type=device.type):
            loss = (model(x) - y).pow(2).mean()
        loss.backward()
        optimizer.step()


def train_configured(model, loader, optimizer, cfg):
    dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[cfg.dtype]
    ctx = torch.autocast(device_type="cuda", dtype=dtype)
    for x, y in loader:
        with ctx:
            loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
