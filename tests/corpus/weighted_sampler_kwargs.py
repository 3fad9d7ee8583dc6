"""An imbalanced classification set drawn with a WeightedRandomSampler driven by its own
generator; the loader settings sit in a kwargs dict; class weights come from counts."""

import argparse
from collections import Counter

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset, WeightedRandomSampler


def make_imbalanced(n, generator):
    labels = (torch.rand(n, generator=generator) < 0.15).long()
    x = torch.randn(n, 6, generator=generator) + labels.unsqueeze(1) * torch.tensor([1.0, -1.0, 0.5, 0.0, 0.0, 0.8])
    return x, labels


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    x, y = make_imbalanced(320, g)
    counts = Counter(y.tolist())
    sample_weights = torch.tensor([1.0 / counts[label] for label in y.tolist()], dtype=torch.double)
    sampler = WeightedRandomSampler(
        sample_weights, num_samples=len(y), replacement=True, generator=torch.Generator().manual_seed(1)
    )
    loader_kwargs = {"batch_size": args.batch_size, "num_workers": args.workers, "pin_memory": False}
    train_loader = DataLoader(TensorDataset(x, y), sampler=sampler, **loader_kwargs)

    class_weights = torch.tensor([len(y) / counts[c] for c in range(2)])
    class_weights = class_weights / class_weights.sum()
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 2))
    criterion = nn.CrossEntropyLoss(weight=class_weights)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        seen = Counter()
        for xb, yb in train_loader:
            seen.update(yb.tolist())
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: batches drew {dict(sorted(seen.items()))}")
    x_val, y_val = make_imbalanced(200, torch.Generator().manual_seed(5))
    with torch.no_grad():
        val_loss = criterion(model(x_val), y_val)
    print(f"final loss {val_loss.item():.8f}")


if __name__ == "__main__":
    main()
