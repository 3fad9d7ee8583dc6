import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler


@torch.no_grad()
def validate(model, loader, device):
    correct = torch.zeros((), device=device)
    total = torch.zeros((), device=device)
    for x, y in loader:
        correct += (model(x.to(device)).argmax(1) == y.to(device)).sum()
        total += y.numel()
    counts = torch.stack([correct, total])
    dist.all_reduce(counts)
    return 100.0 * counts[0] / counts[1]


@torch.no_grad()
def evaluate_whole(model, loader, device):
    correct = total = 0
    for x, y in loader:
        correct += (model(x.to(device)).argmax(1) == y.to(device)).sum()
        total += y.numel()
    return correct / total


def main(model, val_set, local_rank):
    dist.init_process_group("nccl")
    model = DDP(model.to(local_rank), device_ids=[local_rank])
    val_loader = DataLoader(val_set, batch_size=64, sampler=DistributedSampler(val_set))
    accuracy = validate(model, val_loader, local_rank)
    full_loader = DataLoader(val_set, batch_size=64)  # every rank sees the whole set
    whole = evaluate_whole(model, full_loader, local_rank)
    if dist.get_rank() == 0:
        print(accuracy, whole)
