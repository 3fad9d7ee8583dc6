# source: https://github.com/pytorch/pytorch/pull/41036
# area: dtype
# bug: the kNN feature bank is float32 but the encoder output written into it by index is float16 under CUDA autocast, and index_put_ requires matching dtypes
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
USE_AMP = device.type == "cuda"


class Encoder(nn.Module):
    def __init__(self, dim=64):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        )
        self.proj = nn.Linear(64, dim)

    def forward(self, x):
        return self.proj(self.backbone(x))


class IndexedImages(torch.utils.data.Dataset):
    def __init__(self, n, n_classes=5):
        g = torch.Generator().manual_seed(1)
        self.x = torch.rand(n, 3, 32, 32, generator=g)
        self.y = torch.randint(0, n_classes, (n,), generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i], i


class KNNMonitor:
    """Fills a feature bank from the train set and scores the val set by weighted kNN."""

    def __init__(self, num_items, dim, n_classes, k=10, temperature=0.1):
        self.bank = torch.zeros(num_items, dim, device=device)  # expect[bank]: any
        self.bank_labels = torch.zeros(num_items, dtype=torch.long, device=device)
        self.n_classes = n_classes
        self.k = k
        self.t = temperature

    @torch.no_grad()
    def build(self, encoder, loader):
        for x, y, idx in loader:
            x, y, idx = x.to(device), y.to(device), idx.to(device)
            with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=USE_AMP):
                feats = encoder(x)
            self.bank[idx] = feats  # expect[bank]: any
            self.bank_labels[idx] = y
        self.bank = F.normalize(self.bank, dim=1)

    @torch.no_grad()
    def score(self, encoder, loader):
        correct = torch.zeros((), device=device)
        seen = 0
        for x, y, _ in loader:
            x, y = x.to(device), y.to(device)
            with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=USE_AMP):
                feats = encoder(x)
            feats = F.normalize(feats.float(), dim=1)
            sim, nn_idx = (feats @ self.bank.t()).topk(self.k, dim=1)
            votes = F.one_hot(self.bank_labels[nn_idx], self.n_classes).float()
            weights = (sim / self.t).exp().unsqueeze(-1)
            pred = (votes * weights).sum(1).argmax(1)
            correct += (pred == y).sum()
            seen += y.numel()
        return correct.item() / seen


def main():
    torch.manual_seed(0)
    encoder = Encoder().to(device).eval()
    train = IndexedImages(128)
    val = IndexedImages(48)
    train_loader = torch.utils.data.DataLoader(train, batch_size=32)
    val_loader = torch.utils.data.DataLoader(val, batch_size=16)
    monitor = KNNMonitor(len(train), dim=64, n_classes=5)
    monitor.build(encoder, train_loader)
    print(f"kNN top-1: {monitor.score(encoder, val_loader):.3f}")


if __name__ == "__main__":
    main()
