"""Warm-up plus cosine decay with LambdaLR, then ReduceLROnPlateau fed with the
validation loss; the validation split is passed to `evaluate` as plain tensors."""

import math

import torch
import torch.nn as nn
from torch.optim.lr_scheduler import LambdaLR, ReduceLROnPlateau
from torch.utils.data import DataLoader, TensorDataset

WARMUP_STEPS = 4


def make_regression(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 3, generator=g) * 4 - 2
    y = torch.sin(x[:, 0]) + 0.5 * x[:, 1] * x[:, 2]
    return x, y.unsqueeze(1)


def warmup_cosine(total_steps):
    def schedule(step):
        if step < WARMUP_STEPS:
            return (step + 1) / WARMUP_STEPS
        progress = (step - WARMUP_STEPS) / max(1, total_steps - WARMUP_STEPS)
        return 0.5 * (1.0 + math.cos(math.pi * progress))

    return schedule


def evaluate(model, X_val, y_val, loss_fn):
    model.eval()
    with torch.no_grad():
        loss = loss_fn(model(X_val), y_val).item()
    model.train()
    return loss


def main():
    torch.manual_seed(0)
    X_train, y_train = make_regression(160, seed=1)
    X_val, y_val = make_regression(64, seed=2)
    loader = DataLoader(TensorDataset(X_train, y_train), batch_size=16, shuffle=True)
    model = nn.Sequential(nn.Linear(3, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 1))
    loss_fn = nn.MSELoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    epochs = 3
    scheduler = LambdaLR(optimizer, warmup_cosine(epochs * len(loader)))
    for epoch in range(epochs):
        for xb, yb in loader:
            optimizer.zero_grad()
            loss_fn(model(xb), yb).backward()
            optimizer.step()
            scheduler.step()
        print(f"epoch {epoch} lr {scheduler.get_last_lr()[0]:.5f} val {evaluate(model, X_val, y_val, loss_fn):.4f}")

    for group in optimizer.param_groups:
        group["lr"] = 0.02
    plateau = ReduceLROnPlateau(optimizer, mode="min", factor=0.5, patience=0)
    for epoch in range(3):
        for xb, yb in loader:
            optimizer.zero_grad()
            loss_fn(model(xb), yb).backward()
            optimizer.step()
        val_loss = evaluate(model, X_val, y_val, loss_fn)
        plateau.step(val_loss)
        print(f"plateau epoch {epoch} lr {optimizer.param_groups[0]['lr']:.5f} val {val_loss:.4f}")
    print(f"final loss {val_loss:.8f}")


if __name__ == "__main__":
    main()
