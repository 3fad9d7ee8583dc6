import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def train(model, loader, optimizer, local_rank, accum=4):
    model = DDP(model.to(local_rank), device_ids=[local_rank])
    for step, (x, y) in enumerate(loader):
        loss = torch.nn.functional.mse_loss(model(x.to(local_rank)), y.to(local_rank))
        (loss / accum).backward()
        if (step + 1) % accum == 0:
            optimizer.step()
            optimizer.zero_grad()


def train_micro_batches(model, batches, optimizer, local_rank, accum=4):
    # a comment that names no_sync() is no use of it
    model = DDP(model.to(local_rank), device_ids=[local_rank])
    for step in range(1000):
        for micro in range(accum):
            x, y = next(batches)
            loss = torch.nn.functional.mse_loss(model(x), y)
            (loss / accum).backward()
        optimizer.step()
        optimizer.zero_grad()
