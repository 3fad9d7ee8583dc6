"""Gradient accumulation over micro-batches, gradient clipping, and a running loss that is
accumulated in a tensor instead of a Python float."""

import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class ConvRegressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv1d(2, 8, kernel_size=5, padding=2),
            nn.ReLU(),
            nn.Conv1d(8, 8, kernel_size=5, padding=2),
            nn.ReLU(),
            nn.AdaptiveAvgPool1d(4),
        )
        self.head = nn.Linear(8 * 4, 1)

    def forward(self, x):
        return self.head(self.features(x).flatten(1)).squeeze(1)


def make_signals(n, length=32, seed=0):
    g = torch.Generator().manual_seed(seed)
    t = torch.linspace(0, 1, length)
    freq = torch.rand(n, 1, generator=g) * 4 + 1
    phase = torch.rand(n, 1, generator=g) * 3
    x = torch.stack([torch.sin(2 * 3.14159 * freq * t + phase), torch.cos(2 * 3.14159 * freq * t)], dim=1)
    return x + 0.05 * torch.randn(x.shape, generator=g), freq.squeeze(1) - 3.0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--micro-batch", type=int, default=8)
    parser.add_argument("--accumulation-steps", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--max-grad-norm", type=float, default=1.0)
    args = parser.parse_args()
    torch.manual_seed(0)
    x, y = make_signals(128)
    loader = DataLoader(TensorDataset(x, y), batch_size=args.micro_batch, shuffle=True)
    model = ConvRegressor()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
    criterion = nn.MSELoss()
    for epoch in range(args.epochs):
        running_loss = torch.tensor(0.0)
        optimizer.zero_grad()
        for i, (signals, targets) in enumerate(loader):
            loss = criterion(model(signals), targets) / args.accumulation_steps
            loss.backward()
            running_loss += loss.detach()
            if (i + 1) % args.accumulation_steps == 0:
                grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
                optimizer.step()
                optimizer.zero_grad()
        steps = len(loader) // args.accumulation_steps
        print(f"epoch {epoch} loss {running_loss.item() / steps:.4f} grad norm {grad_norm.item():.3f}")
    model.eval()
    with torch.no_grad():
        final = criterion(model(x), y)
    print(f"final loss {final.item():.8f}")


if __name__ == "__main__":
    main()
