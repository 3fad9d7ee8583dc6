import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler


@torch.no_grad()
def evaluate(model, val_set, device):
    sampler = DistributedSampler(val_set, shuffle=False)
    correct = torch.zeros(2, device=device)
    for x, y in DataLoader(val_set, batch_size=64, sampler=sampler):
        pred = model(x.to(device)).argmax(1)
        correct += torch.stack([(pred == y.to(device)).sum(), torch.tensor(len(y), device=device)])
    dist.all_reduce(correct)
    return (correct[0] / correct[1]).item()


@torch.no_grad()
def validate(model, val_set, device):
    val_sampler = DistributedSampler(val_set, shuffle=False)
    loader = DataLoader(val_set, batch_size=64, sampler=val_sampler)
    loss = torch.zeros((), device=device)
    for step, (x, y) in enumerate(loader):
        loss += torch.nn.functional.cross_entropy(model(x.to(device)), y.to(device))
    dist.reduce(loss, dst=0)
    return loss
