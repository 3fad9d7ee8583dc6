# source: https://github.com/runa91/barc_release/issues/9
# area: transfer & sync
# bug: the training DataLoader does heavy per-sample augmentation with num_workers=0 and pin_memory=False, so the GPU idles while the main process prepares each batch and the non_blocking copies cannot overlap
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class AugmentedImages(Dataset):
    """Random crops + flips + gaussian heatmap targets, computed per sample on the CPU."""

    def __init__(self, n=96, size=32, crop=24, joints=4):
        g = torch.Generator().manual_seed(0)
        self.images = torch.rand(n, 3, size, size, generator=g)
        self.joints = torch.randint(4, crop - 4, (n, joints, 2), generator=g).float()
        self.crop = crop

    def __len__(self):
        return len(self.images)

    def _heatmaps(self, pts, sigma=1.5):
        ys, xs = torch.meshgrid(torch.arange(self.crop), torch.arange(self.crop), indexing="ij")
        maps = [torch.exp(-((xs - x) ** 2 + (ys - y) ** 2) / (2 * sigma**2)) for x, y in pts.tolist()]
        return torch.stack(maps)

    def __getitem__(self, i):
        img = self.images[i]
        off = torch.randint(0, img.shape[-1] - self.crop + 1, (2,))
        img = img[:, off[0]:off[0] + self.crop, off[1]:off[1] + self.crop]
        if torch.rand(()) < 0.5:
            img = img.flip(-1)
        return img, self._heatmaps(self.joints[i])


class PoseNet(nn.Module):
    def __init__(self, joints=4):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1), nn.ReLU())
        self.head = nn.Conv2d(16, joints, 1)

    def forward(self, x):
        return self.head(self.body(x))


def main():
    train_set = AugmentedImages()
    train_loader = DataLoader(train_set, batch_size=16, shuffle=True, num_workers=0, pin_memory=False)  # expect: any
    model = PoseNet().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(2):
        total = torch.zeros((), device=device)
        for img, hm in train_loader:
            img, hm = img.to(device, non_blocking=True), hm.to(device, non_blocking=True)
            loss = F.mse_loss(model(img), hm)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.detach()
        print(f"epoch {epoch} loss {total.item() / len(train_loader):.5f}")


if __name__ == "__main__":
    main()
