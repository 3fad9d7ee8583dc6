# source: https://github.com/yangkky/distributed_tutorial/issues/6
# area: porting & distributed
# bug: validation accuracy is computed only from this rank's DistributedSampler shard and never all-reduced, so rank 0 logs and checkpoints on a 1/world_size subset
import os

import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class EarlyStopping:
    def __init__(self, patience=3):
        self.best = -1.0
        self.bad = 0
        self.patience = patience

    def update(self, score):
        if score > self.best:
            self.best, self.bad = score, 0
            return True
        self.bad += 1
        return False

    @property
    def should_stop(self):
        return self.bad >= self.patience


class MLP(nn.Module):
    def __init__(self, d_in=20, classes=3):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(d_in, 64), nn.ReLU(), nn.Linear(64, classes))

    def forward(self, x):
        return self.body(x)


@torch.no_grad()
def evaluate(model, loader, device):
    model.eval()
    correct = torch.zeros((), device=device, dtype=torch.long)
    seen = torch.zeros((), device=device, dtype=torch.long)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        correct += (model(x).argmax(1) == y).sum()
        seen += y.numel()
    model.train()
    return (correct.float() / seen).item()  # expect: any


def make_split(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 20, generator=g)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 1).long()
    return TensorDataset(x, y)


def main():
    distributed = "RANK" in os.environ and dist.is_available()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if distributed:
        torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl")
    device = torch.device("cuda", local_rank) if torch.cuda.is_available() else torch.device("cpu")
    rank = dist.get_rank() if distributed else 0

    train_ds, val_ds = make_split(2048, 0), make_split(512, 1)
    train_sampler = DistributedSampler(train_ds) if distributed else None
    val_sampler = DistributedSampler(val_ds, shuffle=False) if distributed else None
    train_dl = DataLoader(train_ds, batch_size=128, sampler=train_sampler, shuffle=train_sampler is None)
    val_dl = DataLoader(val_ds, batch_size=256, sampler=val_sampler)

    model = MLP().to(device)
    if distributed:
        model = DDP(model, device_ids=[local_rank])
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    stopper = EarlyStopping()
    for epoch in range(5):
        if train_sampler is not None:
            train_sampler.set_epoch(epoch)
        for x, y in train_dl:
            x, y = x.to(device), y.to(device)
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        acc = evaluate(model, val_dl, device)
        improved = stopper.update(acc)
        if rank == 0:
            print(f"epoch {epoch}: val acc {acc:.3f}{' (best)' if improved else ''}")
        if stopper.should_stop:
            break
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
