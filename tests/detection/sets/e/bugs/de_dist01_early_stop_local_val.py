# source: https://github.com/ppln-team/ppln/pull/43
# area: porting & distributed
# bug: the early-stopping decision uses each rank's own shard of the validation loss, so on several GPUs ranks stop at different epochs and the survivors hang in the next DDP all-reduce
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class EarlyStopping:
    def __init__(self, patience=3, min_delta=1e-4):
        self.patience = patience
        self.min_delta = min_delta
        self.best = float("inf")
        self.bad_epochs = 0

    def step(self, value):
        if value < self.best - self.min_delta:
            self.best = value
            self.bad_epochs = 0
        else:
            self.bad_epochs += 1
        return self.bad_epochs >= self.patience


def setup_device():
    if "RANK" in os.environ:
        use_cuda = torch.cuda.is_available()
        dist.init_process_group("nccl" if use_cuda else "gloo")
        local_rank = int(os.environ["LOCAL_RANK"])
        if use_cuda:
            torch.cuda.set_device(local_rank)
            return torch.device("cuda", local_rank), True
        return torch.device("cpu"), True
    return torch.device("cuda" if torch.cuda.is_available() else "cpu"), False


class Trainer:
    def __init__(self, model, device, distributed, epochs=15, lr=1e-2):
        self.device = device
        self.distributed = distributed
        self.model = model.to(device)
        if distributed:
            ids = [device.index] if device.type == "cuda" else None
            self.model = nn.parallel.DistributedDataParallel(self.model, device_ids=ids)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=lr)
        self.loss_fn = nn.MSELoss()
        self.stopper = EarlyStopping(patience=3)
        self.epochs = epochs

    def _loader(self, ds, shuffle):
        sampler = DistributedSampler(ds, shuffle=shuffle) if self.distributed else None
        loader = DataLoader(ds, batch_size=32, sampler=sampler,
                            shuffle=shuffle and sampler is None,
                            pin_memory=self.device.type == "cuda")
        return loader, sampler

    def evaluate(self, loader):
        self.model.eval()
        total = torch.zeros((), device=self.device)
        count = torch.zeros((), device=self.device)
        with torch.no_grad():
            for x, y in loader:
                x = x.to(self.device, non_blocking=True)
                y = y.to(self.device, non_blocking=True)
                total += self.loss_fn(self.model(x), y) * x.size(0)
                count += x.size(0)
        return total / count  # expect[w]: any

    def fit(self, train_ds, val_ds):
        train_loader, train_sampler = self._loader(train_ds, True)
        val_loader, _ = self._loader(val_ds, False)
        for epoch in range(self.epochs):
            if train_sampler is not None:
                train_sampler.set_epoch(epoch)
            self.model.train()
            for x, y in train_loader:
                x = x.to(self.device, non_blocking=True)
                y = y.to(self.device, non_blocking=True)
                self.opt.zero_grad(set_to_none=True)
                self.loss_fn(self.model(x), y).backward()
                self.opt.step()
            val_loss = self.evaluate(val_loader).item()
            if self.stopper.step(val_loss):  # expect[w]: any
                print(f"early stop at epoch {epoch}, best {self.stopper.best:.4f}")
                break
        return self.stopper.best


def make_data(n, w, gen):
    x = torch.randn(n, 16, generator=gen)
    return TensorDataset(x, x @ w + 0.1 * torch.randn(n, 1, generator=gen))


if __name__ == "__main__":
    device, distributed = setup_device()
    gen = torch.Generator().manual_seed(0)
    w_true = torch.randn(16, 1, generator=gen)
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 1))
    trainer = Trainer(model, device, distributed)
    best = trainer.fit(make_data(512, w_true, gen), make_data(128, w_true, gen))
    if not distributed or dist.get_rank() == 0:
        print(f"best val loss {best:.4f}")
    if distributed:
        dist.destroy_process_group()
