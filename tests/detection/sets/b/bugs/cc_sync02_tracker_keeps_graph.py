# source: https://github.com/dmlc/dgl/issues/5302
# area: transfer & sync
# bug: the running-loss tracker adds the live loss tensor (no .detach()), so every step's autograd graph stays chained to self.total and GPU memory grows all epoch
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class AverageMeter:
    """Keeps a running mean of a scalar metric over an epoch."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.total = 0.0
        self.count = 0

    def update(self, value, n=1):
        self.total = self.total + value * n  # expect: any
        self.count += n

    @property
    def avg(self):
        return self.total / max(self.count, 1)


class ConvNet(nn.Module):
    def __init__(self, num_classes=5):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc = nn.Linear(16 * 4 * 4, num_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))


def train_one_epoch(model, loader, optimizer, meter):
    model.train()
    meter.reset()
    for images, targets in loader:
        images, targets = images.to(device), targets.to(device)
        loss = F.cross_entropy(model(images), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        meter.update(loss, n=images.size(0))
    return meter.avg


def main():
    images = torch.randn(192, 1, 16, 16)
    labels = torch.randint(0, 5, (192,))
    loader = DataLoader(TensorDataset(images, labels), batch_size=32, shuffle=True)
    model = ConvNet().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    meter = AverageMeter()
    for epoch in range(3):
        avg = train_one_epoch(model, loader, optimizer, meter)
        print(f"epoch {epoch}: mean loss {float(avg):.4f}")


if __name__ == "__main__":
    main()
