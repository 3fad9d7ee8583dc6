# source: https://github.com/NVIDIA/apex/issues/886
# area: porting & distributed
# bug: the checkpoint is written when local_rank == 0, i.e. by one process on every node, so in a multi-node job several processes write the same shared file at once and corrupt it
import argparse
import os
import shutil
import socket
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def get_args(argv=None):
    p = argparse.ArgumentParser(description="ImageNet-style DDP training")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--out-dir", default=None)
    p.add_argument("--local_rank", type=int, default=int(os.environ.get("LOCAL_RANK", 0)))
    return p.parse_args(argv)


def init_process(args):
    if "RANK" not in os.environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            os.environ["MASTER_PORT"] = str(s.getsockname()[1])
        os.environ.update(RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1")
    if torch.cuda.is_available():
        torch.cuda.set_device(args.local_rank)
        args.device = torch.device("cuda", args.local_rank)
    else:
        args.device = torch.device("cpu")
    dist.init_process_group("nccl" if args.device.type == "cuda" else "gloo")


def resnetish(num_classes=10):
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, num_classes))


def save_checkpoint(state, is_best, out_dir):
    path = os.path.join(out_dir, "checkpoint.pth.tar")
    torch.save(state, path)
    if is_best:
        shutil.copyfile(path, os.path.join(out_dir, "model_best.pth.tar"))


def train_one_epoch(model, criterion, optimizer, args, steps=4):
    model.train()
    loss_sum = torch.zeros((), device=args.device)
    for _ in range(steps):
        images = torch.randn(args.batch_size, 3, 16, 16, device=args.device)
        target = torch.randint(0, 10, (args.batch_size,), device=args.device)
        loss = criterion(model(images), target)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        loss_sum += loss.detach()
    dist.all_reduce(loss_sum)
    return loss_sum.item() / (steps * dist.get_world_size())


def main(argv=None):
    args = get_args(argv)
    init_process(args)
    out_dir = args.out_dir or os.path.join(tempfile.gettempdir(), f"imagenet_ddp_{os.environ['MASTER_PORT']}")
    os.makedirs(out_dir, exist_ok=True)
    model = resnetish().to(args.device)
    model = DDP(model, device_ids=[args.local_rank] if args.device.type == "cuda" else None)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    best_loss = float("inf")
    for epoch in range(args.epochs):
        loss = train_one_epoch(model, criterion, optimizer, args)
        is_best = loss < best_loss
        best_loss = min(loss, best_loss)
        if args.local_rank == 0:  # expect: any
            save_checkpoint({"epoch": epoch + 1, "state_dict": model.module.state_dict(),
                             "best_loss": best_loss, "optimizer": optimizer.state_dict()}, is_best, out_dir)
        dist.barrier()
    if dist.get_rank() == 0:
        print("saved:", sorted(os.listdir(out_dir)), f"best loss {best_loss:.4f}")
        if args.out_dir is None:
            shutil.rmtree(out_dir, ignore_errors=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main([])
