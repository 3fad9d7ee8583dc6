# twin of: bugs/dm_dist03_runner_sampler_epoch.py
# area: porting & distributed
# correct: the runner reseeds the DistributedSampler with set_epoch before each epoch, so shuffling differs per epoch and stays consistent across ranks
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def dist_context():
    if "RANK" in os.environ and dist.is_available():
        local_rank = int(os.environ.get("LOCAL_RANK", 0))
        if torch.cuda.is_available():
            torch.cuda.set_device(local_rank)
            dist.init_process_group("nccl")
            return torch.device("cuda", local_rank), dist.get_rank(), dist.get_world_size()
        dist.init_process_group("gloo")
        return torch.device("cpu"), dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return device, 0, 1


class Callback:
    def on_epoch_start(self, runner):
        pass

    def on_epoch_end(self, runner):
        pass


class LoggerCallback(Callback):
    def on_epoch_end(self, runner):
        if runner.rank == 0:
            loss = (runner.epoch_loss / runner.epoch_batches).item()
            print(f"epoch {runner.epoch}: loss={loss:.4f}")


class SupervisedRunner:
    def __init__(self, model, criterion, optimizer, device, rank, world_size, callbacks=()):
        self.device, self.rank, self.world_size = device, rank, world_size
        model = model.to(device)
        if world_size > 1:
            model = DDP(model, device_ids=[device.index] if device.type == "cuda" else None)
        self.model, self.criterion, self.optimizer = model, criterion, optimizer
        self.callbacks = list(callbacks)
        self.epoch = 0

    def get_loader(self, dataset, batch_size):
        sampler = DistributedSampler(dataset, num_replicas=self.world_size, rank=self.rank, shuffle=True)
        return DataLoader(dataset, batch_size=batch_size, sampler=sampler, drop_last=True,
                          pin_memory=self.device.type == "cuda")

    def _run_epoch(self, loader):
        self.model.train()
        self.epoch_loss = torch.zeros((), device=self.device)
        self.epoch_batches = 0
        for features, targets in loader:
            features = features.to(self.device, non_blocking=True)
            targets = targets.to(self.device, non_blocking=True)
            loss = self.criterion(self.model(features), targets)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            self.epoch_loss += loss.detach()
            self.epoch_batches += 1

    def run(self, dataset, num_epochs, batch_size=32):
        loader = self.get_loader(dataset, batch_size)
        for epoch in range(num_epochs):
            self.epoch = epoch
            if isinstance(loader.sampler, DistributedSampler):
                loader.sampler.set_epoch(epoch)
            for cb in self.callbacks:
                cb.on_epoch_start(self)
            self._run_epoch(loader)
            for cb in self.callbacks:
                cb.on_epoch_end(self)


def make_dataset(n=512, dim=20, classes=4):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, dim, generator=g)
    w = torch.randn(dim, classes, generator=g)
    y = (x @ w).argmax(dim=1)
    return TensorDataset(x, y)


def main():
    device, rank, world_size = dist_context()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    runner = SupervisedRunner(model, nn.CrossEntropyLoss(), optimizer, device, rank, world_size,
                              callbacks=[LoggerCallback()])
    runner.run(make_dataset(), num_epochs=3)
    if world_size > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
