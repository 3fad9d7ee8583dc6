# source: https://discuss.pytorch.org/t/non-blocking-device-to-host-transfer/42353/5
# area: transfer & sync
# bug: predictions are copied GPU->CPU with non_blocking=True and read by numpy immediately, before the copy has finished, so hit counts are garbage on a GPU
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class ConvClassifier(nn.Module):
    def __init__(self, n_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        )
        self.fc = nn.Linear(32, n_classes)

    def forward(self, x):
        return self.fc(self.features(x).flatten(1))


def make_eval_loader(n=256, batch_size=32):
    g = torch.Generator().manual_seed(0)
    images = torch.randn(n, 3, 32, 32, generator=g)
    labels = torch.randint(0, 10, (n,), generator=g)
    return DataLoader(TensorDataset(images, labels), batch_size=batch_size,
                      shuffle=False, pin_memory=torch.cuda.is_available())


class Evaluator:
    def __init__(self, model, device, n_classes=10):
        self.model = model
        self.device = device
        self.n_classes = n_classes

    @torch.no_grad()
    def run(self, loader):
        self.model.eval()
        hits = 0
        total = 0
        confusion = np.zeros((self.n_classes, self.n_classes), dtype=np.int64)
        for images, labels in loader:
            images = images.to(self.device, non_blocking=True)
            logits = self.model(images)
            preds = logits.argmax(dim=1).to("cpu", non_blocking=True)
            preds_np = preds.numpy()  # expect: any
            labels_np = labels.numpy()
            hits += int((preds_np == labels_np).sum())
            total += labels_np.shape[0]
            np.add.at(confusion, (labels_np, preds_np), 1)
        return hits / max(total, 1), confusion


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    model = ConvClassifier().to(device)
    loader = make_eval_loader()
    acc, confusion = Evaluator(model, device).run(loader)
    per_class = confusion.diagonal() / np.maximum(confusion.sum(axis=1), 1)
    print(f"top-1 {acc:.3f}")
    print("per-class recall", np.round(per_class, 3).tolist())


if __name__ == "__main__":
    main()
