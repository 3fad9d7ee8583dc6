from dataclasses import dataclass

import torch
from torch.utils.data import DataLoader

loader = DataLoader(range(10), batch_size=4, pin_memory=True)
zero = DataLoader(range(10), num_workers=0, pin_memory=True)


def train(model, dataset, optimizer, device):
    model.to(device)
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = model(x).sum()
        loss.backward()
        optimizer.step()


from dataclasses import dataclass  # noqa: E402


@dataclass
class LoaderConfig:
    batch_size: int = 32
    num_workers: int = 0


def make_loader(dataset, cfg: LoaderConfig):
    return DataLoader(dataset, batch_size=cfg.batch_size, num_workers=cfg.num_workers)


@dataclass
class DataConfig:
    batch_size: int = 16
    loader_workers: int = 0


class DataModule:
    def __init__(self, cfg, dataset):
        self.cfg, self.dataset = cfg, dataset

    def train_dataloader(self):
        workers = self.cfg.loader_workers
        return DataLoader(self.dataset, batch_size=self.cfg.batch_size, num_workers=workers)


def fit(model, dataset, device):
    dm = DataModule(DataConfig(), dataset)
    for images, labels in dm.train_dataloader():
        images = images.to(device)
        model(images).sum().backward()


from types import SimpleNamespace  # noqa: E402

settings = SimpleNamespace(loader=SimpleNamespace(batch_size=8, workers=0))


def make_namespaced_loader(dataset):
    return DataLoader(dataset, batch_size=settings.loader.batch_size, num_workers=settings.loader.workers)
