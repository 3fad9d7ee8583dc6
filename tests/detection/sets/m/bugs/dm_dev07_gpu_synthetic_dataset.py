# source: https://github.com/pytorch/pytorch/issues/40403
# area: device placement
# bug: the synthetic dataset keeps its sample tensor on the GPU, so DataLoader workers forked from the parent touch CUDA and fail to re-initialize it
import argparse
import random
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class SyntheticImageDataset(Dataset):
    """Fixed random image + random labels, for measuring training throughput."""

    def __init__(self, num_classes, length, image_size=32):
        super().__init__()
        self.tensor = torch.randn(3, image_size, image_size, device=device)  # expect: any
        self.num_classes = num_classes
        self.length = length

    def __len__(self):
        return self.length

    def __getitem__(self, index):
        torch.manual_seed(index)
        random.seed(index)
        return self.tensor, random.randint(0, self.num_classes - 1)


class SmallResNet(nn.Module):
    def __init__(self, num_classes, width=16):
        super().__init__()
        self.stem = nn.Conv2d(3, width, 3, stride=2, padding=1)
        self.block = nn.Sequential(
            nn.Conv2d(width, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, width, 3, padding=1), nn.BatchNorm2d(width),
        )
        self.fc = nn.Linear(width, num_classes)

    def forward(self, x):
        x = F.relu(self.stem(x))
        x = F.relu(x + self.block(x))
        return self.fc(x.mean(dim=(2, 3)))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="synthetic-data throughput benchmark")
    p.add_argument("--num-classes", type=int, default=10)
    p.add_argument("--samples", type=int, default=96)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--epochs", type=int, default=2)
    return p.parse_args(argv)


def run_benchmark(args):
    dataset = SyntheticImageDataset(args.num_classes, args.samples)
    loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True, num_workers=args.workers,
                        persistent_workers=args.workers > 0)
    model = SmallResNet(args.num_classes).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for epoch in range(args.epochs):
        start = time.perf_counter()
        seen = 0
        for images, labels in loader:
            images, labels = images.to(device), labels.to(device)
            loss = F.cross_entropy(model(images), labels)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            seen += images.size(0)
        if device.type == "cuda":
            torch.cuda.synchronize()
        elapsed = time.perf_counter() - start
        print(f"epoch {epoch}: {seen / elapsed:.1f} img/s, last loss {loss.item():.3f}")


if __name__ == "__main__":
    run_benchmark(parse_args([]))
