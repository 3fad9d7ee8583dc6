"""A custom Dataset over float64 NumPy arrays, as NumPy makes them."""

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class ArrayDataset(Dataset):
    def __init__(self, n=128, features=6, seed=0):
        rng = np.random.default_rng(seed)
        self.x = rng.standard_normal((n, features))
        self.y = (self.x[:, 0] - self.x[:, 1] > 0).astype(np.int64)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return torch.from_numpy(self.x[i]), torch.tensor(self.y[i])


def main():
    torch.manual_seed(0)
    dataset = ArrayDataset()
    train_loader = DataLoader(dataset, batch_size=32, shuffle=False)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 2))
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        for x, y in train_loader:
            x = x.float()
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
    features = torch.from_numpy(dataset.x).float()
    labels = torch.from_numpy(dataset.y)
    with torch.no_grad():
        final = criterion(model(features), labels)
    print(f"final loss {final.item():.8f}")


if __name__ == "__main__":
    main()
