"""A small CNN on random 1x12x12 "images" from a TensorDataset; evaluation on the full set."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class SmallCNN(nn.Module):
    def __init__(self, classes=3):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.conv2 = nn.Conv2d(4, 8, 3, padding=1)
        self.fc = nn.Linear(8 * 3 * 3, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))


def make_data(n=128):
    images = torch.randn(n, 1, 12, 12)
    labels = (images.mean(dim=(1, 2, 3)) > 0).long() + (images[:, 0, 0, 0] > 1).long()
    return images, labels


def main():
    torch.manual_seed(0)
    images, labels = make_data()
    train_loader = DataLoader(TensorDataset(images, labels), batch_size=32, shuffle=False)
    model = SmallCNN()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        for x, y in train_loader:
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
    with torch.no_grad():
        final = criterion(model(images), labels)
    print(f"final loss {final.item():.8f}")


if __name__ == "__main__":
    main()
