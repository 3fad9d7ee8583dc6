import torch
from torch.utils.data import DataLoader


def train(model, dataset, optimizer, device):
    loader = DataLoader(dataset)
    model.to(device)
    for step, (x, y) in enumerate(loader):
        loss = model(x.to(device)).sum()
        loss.backward()
        optimizer.step()
        count = int(step)
        label = int(y[0])  # a CPU batch
    print(loss)


def train_logged(model, dataset, optimizer, device, every=10):
    loader = DataLoader(dataset)
    model.to(device)
    for step, (x, y) in enumerate(loader):
        loss = model(x.to(device)).sum()
        loss.backward()
        optimizer.step()
        if step % every == 0:
            print(f"{step}: {loss:.4f}")  # once every `every` steps
            if loss < 0.01:
                break
        if y is None or step in (1, 2):
            continue


class Trainer:
    def __init__(self, model, optimizer, loader, device):
        self.model, self.optimizer, self.device = model.to(device), optimizer, device
        self.loader = loader

    def train_epoch(self):
        total = torch.zeros((), device=self.device)
        for x in self.loader:
            loss = self.model(x.to(self.device)).sum()
            loss.backward()
            self.optimizer.step()
            total += loss.detach()
        return total

    def fit(self, epochs):
        for epoch in range(epochs):  # one epoch at a time: a read per epoch is fine
            total = self.train_epoch()
            if total < 0.01:
                break


class Aggregator:
    def __init__(self, net):
        self.data = None
        net.register_forward_hook(self._hook)

    def _hook(self, module, args, output):
        if self.data is None:  # identity: no value read
            self.data = torch.zeros_like(output)
        self.data += output


def clip_negatives(loader, model, device):
    for x in loader:
        x = x.to(device)
        x[x < 0] = 0.0  # a masked_fill_: nothing read
        model(x).sum().backward()
