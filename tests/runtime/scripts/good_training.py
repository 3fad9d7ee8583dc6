"""A correct, device-agnostic training script: no findings, the same numbers on CPU and GPU."""

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(8, 32), nn.Linear(32, 32)])
        self.head = nn.Linear(32, 3)
        self.register_buffer("scale", torch.ones(32))

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x)) * self.scale
        noise = torch.randn(x.shape, device=x.device) * 0.01
        return self.head(x + noise)


class Batches(Dataset):
    """Whole batches, ready-made: the loop never waits for data."""

    def __init__(self, x, y, size):
        self.x, self.y, self.size = x, y, size

    def __len__(self):
        return len(self.x) // self.size

    def __getitem__(self, i):
        part = slice(i * self.size, (i + 1) * self.size)
        return self.x[part], self.y[part]


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    data = np.random.default_rng(0).standard_normal((96, 8)).astype(np.float32)
    labels = torch.arange(96) % 3
    batches = Batches(torch.from_numpy(data), labels, 32)
    loader = DataLoader(batches, batch_size=None, pin_memory=device.type == "cuda")
    model = Net().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    total = torch.zeros((), device=device)
    for _ in range(2):
        for x_host, y_host in loader:
            x, y = x_host.to(device, non_blocking=True), y_host.to(device, non_blocking=True)
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.detach()
    print(f"total loss {total.item()!r}")
    print("checksum", repr(sum(p.detach().double().sum().item() for p in model.parameters())))


if __name__ == "__main__":
    main()
