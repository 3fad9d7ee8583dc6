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


def collect(model, batches):
    preds = []
    for x in batches:
        preds.append(model(x).argmax(1).to("cpu", non_blocking=True))
    return torch.cat(preds)


class Sampler:
    def to_host(self, ids):
        return ids.to("cpu", non_blocking=True)


def decode(model, sampler, prompt):
    ids = model(prompt).argmax(-1)
    host = sampler.to_host(ids)
    return host.tolist()
