# twin of: bugs/dh_sync09_meter_sync_every_iter.py
# area: transfer & sync
# correct: the loss is reduced and read on the host, and the device synchronised, only on print iterations, so ordinary steps queue work without waiting
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class AverageMeter:
    def __init__(self):
        self.reset()

    def reset(self):
        self.val = 0.0
        self.avg = 0.0
        self.sum = 0.0
        self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count


def to_python_float(t):
    if hasattr(t, "item"):
        return t.item()
    return t[0]


def reduce_tensor(tensor, world_size):
    rt = tensor.clone()
    if world_size > 1 and torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.all_reduce(rt)
        rt /= world_size
    return rt


class SmallResNet(nn.Module):
    def __init__(self, num_classes=100):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU())
        self.block = nn.Sequential(nn.Conv2d(32, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(),
                                   nn.Conv2d(32, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32))
        self.fc = nn.Linear(32, num_classes)

    def forward(self, x):
        x = self.stem(x)
        x = F.relu(x + self.block(x))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


def train(batches, model, criterion, optimizer, epoch, args, device):
    batch_time = AverageMeter()
    losses = AverageMeter()
    model.train()
    end = time.time()
    for i, (images, target) in enumerate(batches):
        images = images.to(device)
        target = target.to(device)
        output = model(images)
        loss = criterion(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

        if i % args.print_freq == 0:
            reduced_loss = reduce_tensor(loss.data, args.world_size)
            losses.update(to_python_float(reduced_loss), images.size(0))
            if device.type == "cuda":
                torch.cuda.synchronize()
            batch_time.update((time.time() - end) / args.print_freq)
            end = time.time()
            print(f"Epoch [{epoch}][{i}/{len(batches)}] Time {batch_time.val:.3f} ({batch_time.avg:.3f}) "
                  f"Loss {losses.val:.4f} ({losses.avg:.4f})")


def synthetic_batches(n, batch_size, device_gen):
    return [(torch.randn(batch_size, 3, 32, 32, generator=device_gen),
             torch.randint(0, 100, (batch_size,), generator=device_gen)) for _ in range(n)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--print-freq", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=16)
    args = parser.parse_args([])
    args.world_size = 1
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    gen = torch.Generator().manual_seed(0)
    batches = synthetic_batches(10, args.batch_size, gen)
    model = SmallResNet().to(device)
    criterion = nn.CrossEntropyLoss().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    for epoch in range(args.epochs):
        train(batches, model, criterion, optimizer, epoch, args, device)


if __name__ == "__main__":
    main()
