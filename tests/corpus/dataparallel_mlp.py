"""An MLP wrapped in nn.DataParallel, the old way to use several GPUs."""

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    torch.manual_seed(0)
    inputs = torch.randn(128, 10)
    targets = inputs[:, :3].sum(dim=1, keepdim=True)
    train_loader = DataLoader(TensorDataset(inputs, targets), batch_size=32)
    model = nn.DataParallel(nn.Sequential(nn.Linear(10, 24), nn.ReLU(), nn.Linear(24, 1)))
    criterion = nn.MSELoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(3):
        for x, y in train_loader:
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch} loss {loss.item():.4f}")
    with torch.no_grad():
        final = criterion(model(inputs), targets)
    print(f"final loss {final.item():.8f}")


if __name__ == "__main__":
    main()
