# source: https://github.com/mapbox/robosat/pull/112
# area: transfer & sync
# bug: the per-batch metric pulls the full prediction and mask maps to the host as numpy every training step, syncing the GPU and copying whole masks each iteration
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class TinySegNet(nn.Module):
    def __init__(self, in_ch=3, num_classes=2, width=16):
        super().__init__()
        self.enc1 = nn.Sequential(nn.Conv2d(in_ch, width, 3, padding=1), nn.ReLU())
        self.enc2 = nn.Sequential(nn.Conv2d(width, width * 2, 3, stride=2, padding=1), nn.ReLU())
        self.up = nn.ConvTranspose2d(width * 2, width, 2, stride=2)
        self.head = nn.Conv2d(width * 2, num_classes, 1)

    def forward(self, x):
        a = self.enc1(x)
        b = self.enc2(a)
        u = self.up(b)
        return self.head(torch.cat([a, u], dim=1))


class Metrics:
    """Binary segmentation confusion statistics accumulated over an epoch."""

    def __init__(self, labels=(0, 1)):
        self.labels = labels
        self.tn = self.fn = self.fp = self.tp = 0

    def add(self, actual, logits):
        predicted = logits.argmax(dim=1).cpu().numpy().ravel()  # expect[m]: any
        actual = actual.cpu().numpy().ravel()  # expect[m]: any
        matrix = np.bincount(actual * 2 + predicted, minlength=4).reshape(2, 2)
        self.tn += int(matrix[0, 0])
        self.fp += int(matrix[0, 1])
        self.fn += int(matrix[1, 0])
        self.tp += int(matrix[1, 1])

    def get_miou(self):
        iou_fg = self.tp / max(self.tp + self.fp + self.fn, 1)
        iou_bg = self.tn / max(self.tn + self.fn + self.fp, 1)
        return (iou_fg + iou_bg) / 2

    def get_fg_iou(self):
        return self.tp / max(self.tp + self.fp + self.fn, 1)


def make_tiles(n=48, size=32, seed=0):
    g = torch.Generator().manual_seed(seed)
    images = torch.rand(n, 3, size, size, generator=g)
    masks = (images.mean(dim=1) > 0.5).long()
    return TensorDataset(images, masks)


def train(loader, num_classes, device, net, optimizer, criterion):
    net.train()
    metrics = Metrics()
    running = torch.zeros((), device=device)
    for images, masks in loader:
        images = images.to(device)
        masks = masks.to(device)
        outputs = net(images)
        loss = criterion(outputs, masks)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        running += loss.detach()
        metrics.add(masks, outputs.detach())
    return {
        "loss": running.item() / len(loader),
        "miou": metrics.get_miou(),
        "fg_iou": metrics.get_fg_iou(),
    }


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    loader = DataLoader(make_tiles(), batch_size=8, shuffle=True)
    net = TinySegNet().to(device)
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    weight = torch.tensor([1.0, 2.0], device=device)
    criterion = lambda out, tgt: F.cross_entropy(out, tgt, weight=weight)
    for epoch in range(2):
        stats = train(loader, 2, device, net, optimizer, criterion)
        print(f"epoch {epoch}: loss={stats['loss']:.4f} miou={stats['miou']:.3f} fg={stats['fg_iou']:.3f}")


if __name__ == "__main__":
    main()
