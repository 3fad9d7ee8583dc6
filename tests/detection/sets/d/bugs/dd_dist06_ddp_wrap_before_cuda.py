# source: https://github.com/pytorch/pytorch/issues/46821
# area: porting & distributed
# bug: the model is wrapped in DistributedDataParallel with device_ids=[gpu] while its parameters are still on the CPU; it is moved to the GPU only afterwards
import argparse
import os
import socket

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def parse_args(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--gpu", type=int, default=None)
    return p.parse_args(argv)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build_model(num_classes=10):
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, num_classes),
    )


def synthetic_digits(n=512, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 1, 12, 12, generator=g)
    y = torch.randint(0, 10, (n,), generator=g)
    x[torch.arange(n), 0, y, y] += 3.0
    return TensorDataset(x, y)


def main_worker(local_rank, args):
    use_cuda = torch.cuda.is_available()
    args.gpu = local_rank if use_cuda else None
    if use_cuda:
        torch.cuda.set_device(args.gpu)
    dist.init_process_group("nccl" if use_cuda else "gloo")
    device = torch.device("cuda", args.gpu) if use_cuda else torch.device("cpu")

    model = build_model()
    model = DDP(model, device_ids=[args.gpu] if use_cuda else None)  # expect: any
    model.to(device)

    criterion = nn.CrossEntropyLoss().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=1e-4)

    world_size = dist.get_world_size()
    dataset = synthetic_digits()
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=args.batch_size // world_size, sampler=sampler)

    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        model.train()
        running = torch.zeros((), device=device)
        for images, target in loader:
            images, target = images.to(device), target.to(device)
            loss = criterion(model(images), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            running += loss.detach()
        dist.all_reduce(running)
        if dist.get_rank() == 0:
            print(f"epoch {epoch}: loss {(running / (len(loader) * world_size)).item():.4f}")

    dist.destroy_process_group()


def main():
    args = parse_args([])
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("LOCAL_RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(_free_port()))
    main_worker(int(os.environ["LOCAL_RANK"]), args)


if __name__ == "__main__":
    main()
