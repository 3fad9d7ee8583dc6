# source: https://github.com/webdataset/webdataset/pull/408
# area: device placement
# bug: the dataset decodes cached feature files with torch.load and no map_location, so features written from the GPU are restored onto cuda:0 inside the DataLoader worker processes
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class FrozenBackbone(nn.Module):
    def __init__(self, out_dim=48):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, out_dim))

    def forward(self, x):
        return self.net(x)


@torch.no_grad()
def precompute_features(backbone, cache_dir, n_samples=96, batch_size=32):
    backbone.eval()
    paths = []
    for start in range(0, n_samples, batch_size):
        images = torch.rand(batch_size, 3, 32, 32, device=device)
        labels = (images.mean(dim=(1, 2, 3)) > 0.5).long()
        feats = backbone(images)
        for i in range(batch_size):
            path = os.path.join(cache_dir, f"sample_{start + i:05d}.pt")
            torch.save({"feat": feats[i].clone(), "label": labels[i].clone()}, path)
            paths.append(path)
    return paths


class FeatureShardDataset(Dataset):
    def __init__(self, paths):
        self.paths = list(paths)

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, idx):
        sample = torch.load(self.paths[idx])  # expect: any
        return sample["feat"], sample["label"]


class LinearProbe(nn.Module):
    def __init__(self, in_dim=48, n_classes=2):
        super().__init__()
        self.fc = nn.Linear(in_dim, n_classes)

    def forward(self, x):
        return self.fc(x)


def train_probe(paths, epochs=2):
    loader = DataLoader(FeatureShardDataset(paths), batch_size=16, shuffle=True,
                        num_workers=2, pin_memory=torch.cuda.is_available())
    probe = LinearProbe().to(device)
    opt = torch.optim.SGD(probe.parameters(), lr=0.1)
    for epoch in range(epochs):
        correct = torch.zeros((), device=device, dtype=torch.long)
        for feat, label in loader:
            feat = feat.to(device, non_blocking=True)
            label = label.to(device, non_blocking=True)
            logits = probe(feat)
            loss = F.cross_entropy(logits, label)
            opt.zero_grad()
            loss.backward()
            opt.step()
            correct += (logits.argmax(dim=1) == label).sum()
        print(f"epoch {epoch}: acc {correct.item() / len(paths):.3f}")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as cache_dir:
        backbone = FrozenBackbone().to(device)
        paths = precompute_features(backbone, cache_dir)
        train_probe(paths)
