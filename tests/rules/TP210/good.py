import torch
from torch.utils.data import DataLoader

loader = DataLoader(range(10), batch_size=4, num_workers=4, pin_memory=True)


def train(model, dataset, optimizer, device):
    model.to(device)
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = model(x).sum()
        loss.backward()
        optimizer.step()


def evaluate(dataset):
    # batches never reach an accelerator in this function, but the file moves some: still fine
    return DataLoader(dataset, num_workers=2)


from dataclasses import dataclass  # noqa: E402


@dataclass
class LoaderConfig:
    batch_size: int = 32
    num_workers: int = 0


def make_loader(dataset, cfg: LoaderConfig):
    return DataLoader(dataset, batch_size=cfg.batch_size, num_workers=cfg.num_workers)


def main(dataset):
    return make_loader(dataset, LoaderConfig(num_workers=8))


from types import SimpleNamespace  # noqa: E402

settings = SimpleNamespace(loader=SimpleNamespace(batch_size=8, workers=4))


def make_namespaced_loader(dataset):
    return DataLoader(dataset, batch_size=settings.loader.batch_size, num_workers=settings.loader.workers)
