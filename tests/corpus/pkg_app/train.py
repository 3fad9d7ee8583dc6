"""Entry point: python -m pkg_app.train"""

import torch
import torch.nn as nn
from torch.utils.data import DataLoader

from pkg_app.data import WaveDataset
from pkg_app.model import GatedMLP


def main():
    torch.manual_seed(0)
    loader = DataLoader(WaveDataset(), batch_size=24, shuffle=True)
    model = GatedMLP()
    criterion = nn.MSELoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(3):
        for inputs, targets in loader:
            optimizer.zero_grad()
            loss = criterion(model(inputs), targets)
            loss.backward()
            optimizer.step()
    print(f"final loss {loss.item():.8f}")


if __name__ == "__main__":
    main()
