"""A small CPU training script of the kind people bring to a GPU, with the classic mistakes.

It trains a classifier on synthetic NumPy data. It runs correctly on the CPU; moved to a GPU by
hand it would hit most of the walls torchport is about. `torchport check`, `port` and
`run --simulate cuda` all use it as their bundled example.
"""

import os
import tempfile

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class NumpyDataset(Dataset):
    def __init__(self, n=512, features=20, classes=4, seed=0):
        rng = np.random.default_rng(seed)
        self.x = rng.standard_normal((n, features))  # float64, as NumPy makes it
        self.y = rng.integers(0, classes, size=n)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return torch.from_numpy(self.x[i]), torch.tensor(self.y[i])


class Classifier(nn.Module):
    def __init__(self, features=20, hidden=64, classes=4):
        super().__init__()
        self.layers = [nn.Linear(features, hidden), nn.Linear(hidden, hidden)]
        self.head = nn.Linear(hidden, classes)
        self.scale = torch.ones(hidden)

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x)) * self.scale
        noise = torch.randn(x.shape) * 0.01
        return self.head(x + noise)


def main():
    torch.manual_seed(0)
    loader = DataLoader(NumpyDataset(), batch_size=64, shuffle=True)
    model = Classifier()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        for x, y in loader:
            x = x.float()
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: last batch loss {loss.item():.4f}")
    checkpoint = os.path.join(tempfile.gettempdir(), "torchport-example.pt")
    torch.save(model.state_dict(), checkpoint)
    state = torch.load(checkpoint)
    model.load_state_dict(state)


if __name__ == "__main__":
    main()
