"""An iris-style classifier written with `from torch import ...` names only (no plain
`import torch`), hand-formatted calls with comments inside them, and a trailing-comma
style the author likes; a port must leave all of that as it is."""

import numpy as np
from torch import manual_seed, no_grad, tensor
from torch import nn, optim
from torch.utils.data import DataLoader, TensorDataset


def make_flowers(n, rng):
    species = rng.integers(0, 3, size=n)
    means = np.array([[5.0, 3.4, 1.5, 0.2], [5.9, 2.8, 4.3, 1.3], [6.6, 3.0, 5.6, 2.0]])
    features = means[species] + rng.normal(scale=0.3, size=(n, 4))
    return features, species


class FlowerNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(4, 16),   # sepal and petal sizes in
            nn.ReLU(),
            nn.Linear(16, 3),   # three species out
        )

    def forward(self, x):
        return self.layers(x)


def main():
    manual_seed(0)
    rng = np.random.default_rng(0)
    features, species = make_flowers(150, rng)
    mean, std = features.mean(axis=0), features.std(axis=0)
    x = tensor((features - mean) / std).float()
    y = tensor(species)
    loader = DataLoader(
        TensorDataset(x[:120], y[:120]),
        batch_size=20,   # small batches on purpose
        shuffle=True,
    )
    model = FlowerNet()
    criterion = nn.CrossEntropyLoss(
        label_smoothing=0.05,  # the labels are noisy
    )
    optimizer = optim.SGD(model.parameters(), lr=0.1,
                          momentum=0.9)  # aligned by hand
    for epoch in range(5):
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = criterion(model(xb),
                             yb)  # keep this split
            loss.backward()
            optimizer.step()
    with no_grad():
        val_loss = criterion(model(x[120:]), y[120:])
    print(f"final loss {val_loss.item():.8f}")


if __name__ == "__main__":
    main()
