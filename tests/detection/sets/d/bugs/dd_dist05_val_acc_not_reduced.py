# source: https://github.com/Lyken17/Efficient-PyTorch/issues/24
# area: porting & distributed
# bug: with DDP each GPU validates only its shard, and the top-1 it returns is never all-reduced, so rank 0 picks "best" checkpoints from its own slice
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def accuracy(output, target, topk=(1,)):
    maxk = max(topk)
    _, pred = output.topk(maxk, 1, True, True)
    correct = pred.t().eq(target.view(1, -1))
    return [correct[:k].reshape(-1).float().sum() * (100.0 / target.size(0)) for k in topk]


def make_split(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 3, 8, 8, generator=g)
    y = (x.mean(dim=(1, 2, 3)) > 0).long() + 2 * (x[:, 0].mean(dim=(1, 2)) > 0).long()
    return TensorDataset(x, y)


def make_loader(dataset, batch_size, shuffle):
    sampler = DistributedSampler(dataset, shuffle=shuffle) if dist.is_initialized() else None
    return DataLoader(dataset, batch_size=batch_size, sampler=sampler,
                      shuffle=shuffle and sampler is None), sampler


def train_one_epoch(model, loader, criterion, optimizer, device):
    model.train()
    for images, target in loader:
        images, target = images.to(device), target.to(device)
        loss = criterion(model(images), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


@torch.no_grad()
def validate(model, loader, device):
    model.eval()
    correct = torch.zeros((), device=device)
    seen = torch.zeros((), device=device)
    for images, target in loader:
        images, target = images.to(device), target.to(device)
        (acc1,) = accuracy(model(images), target)
        correct += acc1 * target.size(0) / 100.0
        seen += target.size(0)
    return (100.0 * correct / seen).item()  # expect: any


def main():
    if "RANK" in os.environ:
        local_rank = int(os.environ["LOCAL_RANK"])
        if torch.cuda.is_available():
            torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
        device = torch.device("cuda", local_rank) if torch.cuda.is_available() else torch.device("cpu")
    else:
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    rank = dist.get_rank() if dist.is_initialized() else 0

    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                          nn.Flatten(), nn.Linear(16, 4)).to(device)
    if dist.is_initialized():
        model = nn.parallel.DistributedDataParallel(
            model, device_ids=[device.index] if device.type == "cuda" else None)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    train_loader, train_sampler = make_loader(make_split(512, 0), 32, shuffle=True)
    val_loader, _ = make_loader(make_split(200, 1), 50, shuffle=False)

    best_acc1 = 0.0
    with tempfile.TemporaryDirectory() as out_dir:
        for epoch in range(3):
            if train_sampler is not None:
                train_sampler.set_epoch(epoch)
            train_one_epoch(model, train_loader, criterion, optimizer, device)
            acc1 = validate(model, val_loader, device)
            is_best = acc1 > best_acc1
            best_acc1 = max(acc1, best_acc1)
            if rank == 0:
                print(f"epoch {epoch}: val top1 {acc1:.2f} (best {best_acc1:.2f})")
                if is_best:
                    net = model.module if hasattr(model, "module") else model
                    torch.save({"epoch": epoch, "state_dict": net.state_dict(), "best_acc1": best_acc1},
                               os.path.join(out_dir, "model_best.pth"))

    if dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
