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
