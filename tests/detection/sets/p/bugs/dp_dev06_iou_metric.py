# source: https://github.com/Lightning-AI/torchmetrics/issues/275
# area: device placement
# bug: the IoU metric module is never moved to the GPU, so its CPU confusion-matrix buffer is updated with GPU counts
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class ConfusionMatrixIoU(nn.Module):
    def __init__(self, num_classes, ignore_index=255):
        super().__init__()
        self.num_classes = num_classes
        self.ignore_index = ignore_index
        self.register_buffer("confmat", torch.zeros(num_classes, num_classes, dtype=torch.long))

    def reset(self):
        self.confmat.zero_()

    @torch.no_grad()
    def update(self, preds, target):
        n_bins = self.num_classes ** 2
        idx = torch.where(target != self.ignore_index, target * self.num_classes + preds, n_bins).flatten()
        counts = torch.zeros(n_bins + 1, dtype=torch.long, device=preds.device)
        counts.index_add_(0, idx, torch.ones_like(idx))
        self.confmat += counts[:n_bins].view(self.num_classes, self.num_classes)  # expect[c]: any

    def compute(self):
        cm = self.confmat.double()
        inter = cm.diag()
        union = cm.sum(0) + cm.sum(1) - inter
        iou = inter / union.clamp_min(1)
        return iou, iou[union > 0].mean()


class SmallSegNet(nn.Module):
    def __init__(self, n_classes):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        )
        self.classifier = nn.Conv2d(16, n_classes, 1)

    def forward(self, x):
        return self.classifier(self.body(x))


def make_loader(n=32, n_classes=4, size=32, batch_size=8):
    g = torch.Generator().manual_seed(0)
    images = torch.randn(n, 3, size, size, generator=g)
    masks = torch.randint(0, n_classes, (n, size, size), generator=g)
    masks[:, :2, :] = 255
    return DataLoader(TensorDataset(images, masks), batch_size=batch_size)


def evaluate(model, loader, device, num_classes):
    model.eval()
    metric = ConfusionMatrixIoU(num_classes)  # expect[c]: any
    with torch.no_grad():
        for images, masks in loader:
            images, masks = images.to(device), masks.to(device)
            preds = model(images).argmax(dim=1)
            metric.update(preds, masks)
    return metric.compute()


def train_one_epoch(model, loader, device, opt):
    model.train()
    crit = nn.CrossEntropyLoss(ignore_index=255)
    for images, masks in loader:
        images, masks = images.to(device), masks.to(device)
        loss = crit(model(images), masks)
        opt.zero_grad()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    n_classes = 4
    model = SmallSegNet(n_classes).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loader = make_loader(n_classes=n_classes)
    for epoch in range(2):
        train_one_epoch(model, loader, device, opt)
    per_class, miou = evaluate(model, loader, device, n_classes)
    print("per-class IoU:", [round(v, 3) for v in per_class.tolist()], "mIoU:", round(miou.item(), 3))
