import torch
from torch.utils.data import DataLoader

loader = DataLoader(range(10), batch_size=4, num_workers=2)


def train(model, dataset, optimizer, device):
    model.to(device)
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = model(x).sum()
        loss.backward()
        optimizer.step()


class Learner:
    def __init__(self, device):
        self.device = device

    def loader(self, dataset):
        return DataLoader(dataset, batch_size=32, num_workers=2)

    def to_device(self, batch):
        return [t.to(self.device, non_blocking=True) for t in batch]


import argparse  # noqa: E402


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pin-memory", type=int, default=False)
    return parser.parse_args()


def make_loader(dataset, args):
    return DataLoader(dataset, batch_size=32, num_workers=2, pin_memory=args.pin_memory)
