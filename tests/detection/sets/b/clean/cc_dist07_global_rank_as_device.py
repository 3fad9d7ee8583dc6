# twin of: bugs/cc_dist07_global_rank_as_device.py
# area: porting & distributed
# correct: the CUDA device index comes from LOCAL_RANK while the global RANK is only used for the process group and the sampler
import os
import socket
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def setup_device():
    if "RANK" not in os.environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            os.environ["MASTER_PORT"] = str(s.getsockname()[1])
        os.environ.update(MASTER_ADDR="127.0.0.1", RANK="0", LOCAL_RANK="0", WORLD_SIZE="1")
    rank = int(os.environ["RANK"])
    local_rank = int(os.environ["LOCAL_RANK"])
    world_size = int(os.environ["WORLD_SIZE"])
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        device = torch.device(f"cuda:{local_rank}")
        backend = "nccl"
    else:
        device, backend = torch.device("cpu"), "gloo"
    dist.init_process_group(backend, rank=rank, world_size=world_size)
    return rank, world_size, device


@torch.no_grad()
def evaluate(model, loader, device):
    model.eval()
    correct = torch.zeros((), device=device)
    seen = torch.zeros((), device=device)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        correct += (model(x).argmax(1) == y).sum()
        seen += y.numel()
    dist.all_reduce(correct)
    dist.all_reduce(seen)
    model.train()
    return (correct / seen).item()


def main():
    torch.manual_seed(0)
    rank, world_size, device = setup_device()
    x = torch.randn(160, 10)
    y = (x[:, :2].sum(1) > 0).long()
    train_set, val_set = TensorDataset(x[:120], y[:120]), TensorDataset(x[120:], y[120:])
    sampler = DistributedSampler(train_set, num_replicas=world_size, rank=rank)
    loader = DataLoader(train_set, batch_size=20, sampler=sampler)
    val_loader = DataLoader(val_set, batch_size=20, sampler=DistributedSampler(val_set, shuffle=False))
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2)).to(device)
    model = DDP(model, device_ids=[device.index] if device.type == "cuda" else None)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for xb, yb in loader:
            loss = nn.functional.cross_entropy(model(xb.to(device)), yb.to(device))
            opt.zero_grad()
            loss.backward()
            opt.step()
        acc = evaluate(model, val_loader, device)
        if rank == 0:
            print(f"epoch {epoch} val acc {acc:.3f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
