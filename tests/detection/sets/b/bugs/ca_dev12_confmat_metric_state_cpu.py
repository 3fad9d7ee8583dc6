# source: https://github.com/Lightning-AI/torchmetrics/issues/1865
# area: device placement
# bug: the metric keeps its running confusion matrix as a plain CPU tensor and accumulates CUDA bincounts into it with +=
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

NUM_CLASSES = 4


class ConfusionMatrix:
    def __init__(self, num_classes):
        self.num_classes = num_classes
        self.reset()

    def reset(self):
        self.confmat = torch.zeros(self.num_classes, self.num_classes, dtype=torch.long)  # expect[cm]: any

    def update(self, preds, target):
        idx = target * self.num_classes + preds
        counts = torch.bincount(idx, minlength=self.num_classes ** 2)
        self.confmat += counts.reshape(self.num_classes, self.num_classes)  # expect[cm]: any

    def compute_iou(self):
        cm = self.confmat.float()
        inter = cm.diag()
        union = cm.sum(0) + cm.sum(1) - inter
        return (inter / union.clamp(min=1)).mean().item()


class PixelClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, NUM_CLASSES, 1))

    def forward(self, x):
        return self.net(x)


def make_batch(b=4, hw=16):
    img = torch.randn(b, 3, hw, hw)
    mask = (img[:, 0] > 0).long() + 2 * (img[:, 1] > 0).long()
    return img, mask


def validate(model, metric, n_batches=5):
    model.eval()
    metric.reset()
    with torch.no_grad():
        for _ in range(n_batches):
            img, mask = make_batch()
            img, mask = img.to(device), mask.to(device)
            preds = model(img).argmax(1)
            metric.update(preds.flatten(), mask.flatten())
    model.train()
    return metric.compute_iou()


def main():
    model = PixelClassifier().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    metric = ConfusionMatrix(NUM_CLASSES)
    for epoch in range(3):
        for _ in range(10):
            img, mask = make_batch()
            loss = F.cross_entropy(model(img.to(device)), mask.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch} loss {loss.item():.4f} mIoU {validate(model, metric):.3f}")


if __name__ == "__main__":
    main()
