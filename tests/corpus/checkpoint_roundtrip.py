"""Save a checkpoint, load it into a fresh model and an optimizer, continue training."""

import os
import tempfile

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(3, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, x):
        return self.body(x)


def train(model, loader, optimizer, steps):
    criterion = nn.MSELoss()
    for _ in range(steps):
        for x, y in loader:
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
    return loss


def main():
    torch.manual_seed(0)
    x = torch.randn(64, 3)
    y = x.pow(2).sum(dim=1, keepdim=True)
    loader = DataLoader(TensorDataset(x, y), batch_size=16)
    model = Regressor()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    train(model, loader, optimizer, steps=2)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "checkpoint.pt")
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, path)
        checkpoint = torch.load(path)
    restored = Regressor()
    restored.load_state_dict(checkpoint["model"])
    optimizer = torch.optim.Adam(restored.parameters(), lr=0.01)
    optimizer.load_state_dict(checkpoint["optimizer"])
    loss = train(restored, loader, optimizer, steps=2)
    print(f"final loss {loss.item():.8f}")


if __name__ == "__main__":
    main()
