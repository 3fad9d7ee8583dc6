import torch


def fetch(x, device):
    y = x.to("cpu", non_blocking=True)
    torch.cuda.synchronize()
    print(y.sum())
    up = x.to(device, non_blocking=True)
    return up + 1


def refill(x, device_type):
    if x.device.type == device_type:
        x = x.to(device="cpu", non_blocking=True)
    elif x.device == torch.device("cpu"):
        x = x.clone()
    return x


def drain(result, device):
    staging = torch.empty(4, 4, pin_memory=True)
    staging.copy_(result, non_blocking=True)
    torch.cuda.current_stream().synchronize()
    upload = torch.empty(4, 4, device=device)
    upload.copy_(staging, non_blocking=True)  # host to device: ordered on the stream
    return staging.sum() + upload.sum()


def collect_then_sync(model, batches):
    preds = []
    for x in batches:
        preds.append(model(x).argmax(1).to("cpu", non_blocking=True))
    torch.cuda.current_stream().synchronize()
    return torch.cat(preds)


def collect_with_no_grad(model, batches):
    all_preds = []
    with torch.no_grad():
        for x in batches:
            preds = model(x).argmax(1).to("cpu", non_blocking=True)
            all_preds.append(preds)
    torch.cuda.synchronize()
    return [p.numpy() for p in all_preds]


class Sampler:
    def to_host(self, ids):
        return ids.to("cpu", non_blocking=True)


def decode(model, sampler, prompt):
    ids = model(prompt).argmax(-1)
    host = sampler.to_host(ids)
    torch.cuda.synchronize()
    return host.tolist()


def collect_pairs(model, loader, device):
    pending = []
    for images, labels in loader:
        preds = model(images.to(device)).argmax(1).to("cpu", non_blocking=True)
        pending.append((preds, labels))  # kept in a tuple: not read yet
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return [(p.numpy(), y.numpy()) for p, y in pending]
