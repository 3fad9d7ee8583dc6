import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, Subset


@torch.no_grad()
def evaluate(model, val_set, device, rank, world_size):
    # each process takes every world-th sample: none is counted twice
    shard = Subset(val_set, range(rank, len(val_set), world_size))
    correct = torch.zeros(2, device=device)
    for x, y in DataLoader(shard, batch_size=64):
        pred = model(x.to(device)).argmax(1)
        correct += torch.stack([(pred == y.to(device)).sum(), torch.tensor(len(y), device=device)])
    dist.all_reduce(correct)
    return (correct[0] / correct[1]).item()


def train(model, train_set, optimizer, device, epochs):
    sampler = DistributedSampler(train_set, shuffle=False)  # training: repeats are more samples
    loss_sum = torch.zeros((), device=device)
    for epoch in range(epochs):
        for x, y in DataLoader(train_set, batch_size=64, sampler=sampler):
            loss = torch.nn.functional.cross_entropy(model(x.to(device)), y.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            loss_sum += loss.detach()
    dist.all_reduce(loss_sum)
    return loss_sum


@torch.no_grad()
def evaluate_dropping(model, val_set, device):
    sampler = DistributedSampler(val_set, shuffle=False, drop_last=True)
    correct = torch.zeros((), device=device)
    for x, y in DataLoader(val_set, batch_size=64, sampler=sampler):
        correct += (model(x.to(device)).argmax(1) == y.to(device)).sum()
    dist.all_reduce(correct)
    return correct
