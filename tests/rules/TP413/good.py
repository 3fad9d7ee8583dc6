import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def train(model, loader, optimizer, local_rank, log_every=100):
    model = DDP(model.to(local_rank), device_ids=[local_rank])
    for step, (x, y) in enumerate(loader):
        loss = torch.nn.functional.mse_loss(model(x.to(local_rank)), y.to(local_rank))
        loss.backward()
        optimizer.step()  # a step at every batch: nothing to accumulate
        optimizer.zero_grad()
        if step % log_every == 0:
            print(step)
