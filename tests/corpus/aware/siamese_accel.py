"""A triplet-loss embedding network with the device from torch.accelerator (falling back
to the CPU), batches moved with a small helper, and targets made with device=."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

if torch.accelerator.is_available():
    device = torch.accelerator.current_accelerator()
else:
    device = torch.device("cpu")


class TripletSet(Dataset):
    def __init__(self, n, seed, classes=5, dim=8):
        g = torch.Generator().manual_seed(seed)
        self.centers = torch.randn(classes, dim, generator=torch.Generator().manual_seed(0)) * 2
        self.anchor_class = torch.randint(0, classes, (n,), generator=g)
        self.negative_class = (self.anchor_class + torch.randint(1, classes, (n,), generator=g)) % classes
        self.noise = 1.5 * torch.randn(n, 3, dim, generator=g)

    def __len__(self):
        return len(self.anchor_class)

    def __getitem__(self, i):
        a, n = self.centers[self.anchor_class[i]], self.centers[self.negative_class[i]]
        return a + self.noise[i, 0], a + self.noise[i, 1], n + self.noise[i, 2]


def to_device(batch, device):
    return [t.to(device) for t in batch]


class EmbeddingNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 32), nn.PReLU(), nn.Linear(32, 4))

    def forward(self, x):
        return self.net(x)


def main():
    torch.manual_seed(0)
    loader = DataLoader(TripletSet(192, 1), batch_size=32, shuffle=True)
    val = to_device(next(iter(DataLoader(TripletSet(64, 2), batch_size=64))), device)
    model = EmbeddingNet().to(device)
    criterion = nn.TripletMarginLoss(margin=2.0)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    for epoch in range(3):
        for batch in loader:
            anchor, positive, negative = to_device(batch, device)
            optimizer.zero_grad()
            loss = criterion(model(anchor), model(positive), model(negative))
            loss.backward()
            optimizer.step()
    with torch.no_grad():
        a, p, n = (model(t) for t in val)
        closer = (F.pairwise_distance(a, p) < F.pairwise_distance(a, n)).float()
        target = torch.ones(len(closer), device=device)
        print(f"triplet accuracy {(closer == target).float().mean().item():.3f}")
        final = criterion(a, p, n)
    print(f"final loss {final.item():.8f}")


if __name__ == "__main__":
    main()
