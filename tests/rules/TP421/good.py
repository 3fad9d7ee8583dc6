import torch
import torch.distributed as dist
import torch.nn.functional as F


def reduce_tensor(tensor):
    reduced = tensor.clone()
    dist.all_reduce(reduced)
    return reduced


def average_tensor(tensor):
    averaged = tensor.clone()
    dist.all_reduce(averaged, op=dist.ReduceOp.AVG)
    return averaged


def mean_over_ranks(tensor):
    reduced = tensor.detach().clone()
    dist.all_reduce(reduced)
    reduced /= dist.get_world_size()
    return reduced


def train_step(model, optimizer, x, y, criterion, world_size):
    loss = criterion(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    logged = reduce_tensor(loss.detach()) / world_size
    shown = average_tensor(loss.detach()).item()
    return logged.item(), shown, mean_over_ranks(loss).item()


@torch.no_grad()
def accuracy(model, loader, device):
    counts = torch.zeros(2, device=device)
    for x, y in loader:
        counts[0] += (model(x.to(device)).argmax(1) == y.to(device)).sum()
        counts[1] += len(y)
    dist.all_reduce(counts)  # counts summed over the processes, then divided
    return (counts[0] / counts[1]).item()


def epoch_loss(model, loader, device):
    loss_sum = torch.zeros((), device=device)
    for x, y in loader:
        loss_sum += F.cross_entropy(model(x.to(device)), y.to(device)).detach()
    return reduce_tensor(loss_sum / len(loader))


def log_epoch(model, loader, device, history):
    summed = epoch_loss(model, loader, device)
    history.append(summed.item() / dist.get_world_size())


def validate(model, x, y):
    val_loss = F.mse_loss(model(x), y) / dist.get_world_size()
    dist.all_reduce(val_loss)
    print(f"val loss {val_loss.item():.4f}")


def count_samples(loader, device):
    seen = torch.tensor(len(loader.dataset), device=device)
    return reduce_tensor(seen).item()
