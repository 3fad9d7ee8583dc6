# source: https://github.com/Lightning-AI/torchmetrics/issues/167
# area: device placement
# bug: the metric object allocates its confusion-matrix state with torch.zeros on the CPU and accumulates GPU predictions into it in place
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class ConfusionMatrixMetric:
    """Accumulates a confusion matrix over an epoch; reports accuracy and mean IoU."""

    def __init__(self, num_classes):
        self.num_classes = num_classes
        self.reset()

    def reset(self):
        self.mat = torch.zeros(self.num_classes, self.num_classes, dtype=torch.long)  # expect[mat]: any

    @torch.no_grad()
    def update(self, preds, target):
        k = self.num_classes
        idx = target.flatten() * k + preds.flatten()
        self.mat += torch.bincount(idx, minlength=k * k).reshape(k, k)  # expect[mat]: any

    def compute(self):
        mat = self.mat.double()
        tp = mat.diag()
        acc = tp.sum() / mat.sum().clamp(min=1)
        iou = tp / (mat.sum(0) + mat.sum(1) - tp).clamp(min=1)
        return acc.item(), iou.mean().item()


class PixelClassifier(nn.Module):
    def __init__(self, num_classes=3):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(),
            nn.Conv2d(16, num_classes, 1),
        )

    def forward(self, x):
        return self.net(x)


def main():
    images = torch.randn(48, 3, 16, 16)
    masks = (images[:, 0] > 0).long() + (images[:, 1] > 1).long()
    train = DataLoader(TensorDataset(images[:32], masks[:32]), batch_size=8, shuffle=True)
    val = DataLoader(TensorDataset(images[32:], masks[32:]), batch_size=8)
    model = PixelClassifier().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    metric = ConfusionMatrixMetric(num_classes=3)
    for epoch in range(3):
        model.train()
        for x, y in train:
            x, y = x.to(device), y.to(device)
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        model.eval()
        metric.reset()
        with torch.no_grad():
            for x, y in val:
                x, y = x.to(device), y.to(device)
                metric.update(model(x).argmax(1), y)
        acc, miou = metric.compute()
        print(f"epoch {epoch} loss {loss.item():.3f} acc {acc:.3f} mIoU {miou:.3f}")


if __name__ == "__main__":
    main()
