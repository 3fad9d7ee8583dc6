# source: https://theneuralbase.com/pytorch/learn/intermediate/loading-on-different-devices/
# area: device placement
# bug: images.to(device) is called for its side effect but Tensor.to returns a new tensor, so the CPU batch is fed to the GPU conv net
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class ShapesDataset(Dataset):
    """Tiny synthetic 'image' dataset: class k has a bright square in quadrant k."""

    def __init__(self, n=96, size=16):
        self.n, self.size = n, size

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        label = i % 4
        img = torch.rand(1, self.size, self.size) * 0.1
        r, c = divmod(label, 2)
        h = self.size // 2
        img[:, r * h:(r + 1) * h, c * h:(c + 1) * h] += 0.8
        return img, label


class SmallCNN(nn.Module):
    def __init__(self, num_classes=4):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2),
        )
        self.classifier = nn.Linear(16 * 4, num_classes)

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


def train_one_epoch(model, loader, criterion, optimizer):
    model.train()
    running = 0.0
    for images, targets in loader:
        images.to(device)  # expect: any
        targets = targets.to(device)
        optimizer.zero_grad()
        outputs = model(images)
        loss = criterion(outputs, targets)
        loss.backward()
        optimizer.step()
        running += loss.item() * images.size(0)
    return running / len(loader.dataset)


def main():
    loader = DataLoader(ShapesDataset(), batch_size=16, shuffle=True)
    model = SmallCNN()
    model.to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for epoch in range(3):
        print(f"epoch {epoch} loss {train_one_epoch(model, loader, criterion, optimizer):.4f}")


if __name__ == "__main__":
    main()
