# source: https://github.com/facebookresearch/ConvNeXt/issues/106
# area: transfer & sync
# bug: train_one_epoch calls torch.cuda.synchronize() after every optimizer step, draining the GPU queue each iteration so the host can never run ahead
import math
import time
from collections import defaultdict

import torch
import torch.nn as nn


class SmoothedValue:
    def __init__(self):
        self.total = None
        self.count = 0

    def update(self, value, n=1):
        value = value.detach() * n
        self.total = value if self.total is None else self.total + value
        self.count += n

    @property
    def global_avg(self):
        return (self.total / max(self.count, 1)).item()


class MetricLogger:
    def __init__(self):
        self.meters = defaultdict(SmoothedValue)

    def update(self, n=1, **kwargs):
        for k, v in kwargs.items():
            self.meters[k].update(v, n)

    def summary(self):
        return "  ".join(f"{k}: {m.global_avg:.4f}" for k, m in self.meters.items())


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dw = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.GroupNorm(1, dim)
        self.pw = nn.Sequential(nn.Conv2d(dim, 4 * dim, 1), nn.GELU(), nn.Conv2d(4 * dim, dim, 1))

    def forward(self, x):
        return x + self.pw(self.norm(self.dw(x)))


def tiny_convnext(num_classes=10, dim=32):
    return nn.Sequential(nn.Conv2d(3, dim, 4, stride=4), Block(dim), Block(dim),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(dim, num_classes))


def train_one_epoch(model, criterion, data_loader, optimizer, device, epoch, lr_schedule):
    model.train(True)
    metric_logger = MetricLogger()
    start = time.time()
    for it, (samples, targets) in enumerate(data_loader):
        for group in optimizer.param_groups:
            group["lr"] = lr_schedule[epoch * len(data_loader) + it]
        samples = samples.to(device, non_blocking=True)
        targets = targets.to(device, non_blocking=True)
        output = model(samples)
        loss = criterion(output, targets)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if device.type == "cuda":
            torch.cuda.synchronize()  # expect: any
        acc = (output.argmax(dim=1) == targets).float().mean()
        metric_logger.update(loss=loss, acc=acc, n=targets.shape[0])
    print(f"epoch {epoch} ({time.time() - start:.2f}s)  {metric_logger.summary()}")


def build_loader(n=256, batch_size=32):
    g = torch.Generator().manual_seed(0)
    images = torch.randn(n, 3, 32, 32, generator=g)
    labels = torch.randint(0, 10, (n,), generator=g)
    ds = torch.utils.data.TensorDataset(images, labels)
    return torch.utils.data.DataLoader(ds, batch_size=batch_size, shuffle=True,
                                       pin_memory=torch.cuda.is_available(), drop_last=True)


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    model = tiny_convnext().to(device)
    loader = build_loader()
    optimizer = torch.optim.AdamW(model.parameters(), lr=4e-3, weight_decay=0.05)
    epochs = 2
    total = epochs * len(loader)
    schedule = [4e-3 * 0.5 * (1 + math.cos(math.pi * i / total)) for i in range(total)]
    for epoch in range(epochs):
        train_one_epoch(model, nn.CrossEntropyLoss(), loader, optimizer, device, epoch, schedule)
