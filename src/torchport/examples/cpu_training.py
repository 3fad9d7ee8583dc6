"""A small CPU training script of the kind people bring to a GPU, with the classic mistakes.

It trains a convolutional classifier on synthetic 28x28 NumPy images, in which the label is the
bright quadrant. It runs correctly on the CPU; moved to a GPU by hand it would hit most of the
walls torchport is about. `torchport check`, `port` and `run --simulate cuda` all use it as their
bundled example.
"""

import os
import tempfile

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class QuadrantImages(Dataset):
    def __init__(self, n=512, size=28, classes=4, seed=0):
        rng = np.random.default_rng(seed)
        self.images = rng.standard_normal((n, 1, size, size))  # float64, as NumPy makes it
        self.labels = rng.integers(0, classes, size=n)
        half = size // 2
        for image, label in zip(self.images, self.labels):
            row, col = divmod(int(label), 2)
            image[:, row * half : (row + 1) * half, col * half : (col + 1) * half] += 1.0

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return torch.from_numpy(self.images[i]), torch.tensor(self.labels[i])


class Classifier(nn.Module):
    def __init__(self, channels=32, classes=4):
        super().__init__()
        self.blocks = [
            nn.Conv2d(1, channels, 3, padding=1),
            nn.Conv2d(channels, channels, 3, padding=1),
        ]
        self.head = nn.Linear(channels * 7 * 7, classes)
        self.scale = torch.ones(channels, 1, 1)

    def forward(self, x):
        for conv in self.blocks:
            x = torch.max_pool2d(torch.relu(conv(x)) * self.scale, 2)
        noise = torch.randn(x.shape) * 0.01
        return self.head((x + noise).flatten(1))


def main():
    torch.manual_seed(0)
    loader = DataLoader(QuadrantImages(), batch_size=64, shuffle=True)
    model = Classifier()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
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
