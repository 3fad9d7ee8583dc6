# source: https://docs.nvidia.com/dl-cuda-graph/latest/torch-cuda-graph/sync-free-code.html
# area: transfer & sync
# bug: the masked loss helper branches in Python on a CUDA tensor (if valid.sum() == 0), forcing a host-device sync on every call
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
IGNORE = -1.0


class SparseDepthDataset(Dataset):
    """Images with a sparse depth target; missing pixels are IGNORE."""

    def __init__(self, n=96, size=16):
        self.images = torch.rand(n, 3, size, size)
        depth = self.images.mean(1, keepdim=True) * 10
        keep = torch.rand_like(depth) < 0.3
        self.depth = torch.where(keep, depth, torch.full_like(depth, IGNORE))

    def __len__(self):
        return self.images.size(0)

    def __getitem__(self, i):
        return self.images[i], self.depth[i]


def masked_l1(pred, target):
    valid = target != IGNORE
    if valid.sum() == 0:  # expect: any
        return pred.sum() * 0.0
    diff = (pred - target).abs() * valid
    return diff.sum() / valid.sum()


class DepthNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(),
            nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(),
            nn.Conv2d(16, 1, 1),
        )

    def forward(self, x):
        return self.net(x)


def train(model, loader, epochs=3):
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for epoch in range(epochs):
        total = torch.zeros((), device=device)
        for img, depth in loader:
            img, depth = img.to(device), depth.to(device)
            loss = masked_l1(model(img), depth)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.detach()
        print(f"epoch {epoch}: L1 {total.item() / len(loader):.3f}")


if __name__ == "__main__":
    train(DepthNet().to(device), DataLoader(SparseDepthDataset(), batch_size=8, shuffle=True))
