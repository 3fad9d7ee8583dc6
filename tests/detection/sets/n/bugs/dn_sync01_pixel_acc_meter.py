# source: https://github.com/ooooverflow/BiSeNet/issues/35
# area: transfer & sync
# bug: the validation meter pulls every prediction and label batch to the host and scores it in NumPy, a GPU sync plus D2H copy per batch that makes validation crawl
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

NUM_CLASSES = 12
PALETTE = np.random.RandomState(0).randint(0, 255, size=(NUM_CLASSES, 3)).astype(np.uint8)


def colour_code(label_map, palette):
    return palette[label_map]


class TinySegNet(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.enc1 = nn.Conv2d(3, 16, 3, padding=1)
        self.enc2 = nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.head = nn.Conv2d(32, num_classes, 1)

    def forward(self, x):
        h = F.relu(self.enc1(x))
        h = F.relu(self.enc2(h))
        out = self.head(h)
        return F.interpolate(out, size=x.shape[-2:], mode="bilinear", align_corners=False)


class PixelAccuracyMeter:
    def __init__(self, palette):
        self.palette = palette
        self.records = []

    def reset(self):
        self.records = []

    def update(self, logits, target):
        pred = logits.argmax(dim=1)
        pred_rgb = colour_code(pred.cpu().numpy(), self.palette)  # expect[h]: any
        target_rgb = colour_code(target.cpu().numpy(), self.palette)  # expect[h]: any
        for p, t in zip(pred_rgb, target_rgb):
            same = np.all(p == t, axis=-1)
            self.records.append(float(same.mean()))

    def compute(self):
        return float(np.mean(self.records)) if self.records else 0.0


def build_val_loader(n=48, size=32):
    g = torch.Generator().manual_seed(1)
    images = torch.rand(n, 3, size, size, generator=g)
    labels = torch.randint(0, NUM_CLASSES, (n, size, size), generator=g)
    return DataLoader(TensorDataset(images, labels), batch_size=8, shuffle=False)


@torch.no_grad()
def validate(model, loader, meter):
    model.eval()
    meter.reset()
    for images, labels in loader:
        images = images.to(device)
        labels = labels.to(device)
        logits = model(images)
        meter.update(logits, labels)
    return meter.compute()


def main():
    torch.manual_seed(0)
    model = TinySegNet(NUM_CLASSES).to(device)
    loader = build_val_loader()
    meter = PixelAccuracyMeter(PALETTE)
    for epoch in range(2):
        acc = validate(model, loader, meter)
        print(f"epoch {epoch}: pixel accuracy {acc:.4f}")


if __name__ == "__main__":
    main()
