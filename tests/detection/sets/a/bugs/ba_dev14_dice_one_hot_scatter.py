# source: https://github.com/yassouali/pytorch-segmentation/issues/80
# area: device placement
# bug: make_one_hot() allocates the one-hot buffer with torch.zeros on the CPU and scatters the GPU label map into it
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
NUM_CLASSES = 3


def make_one_hot(labels, classes):
    # labels: (N, 1, H, W) long -> (N, C, H, W) float
    one_hot = torch.zeros(labels.size(0), classes, labels.size(2), labels.size(3))  # expect: any
    return one_hot.scatter_(1, labels, 1.0)


class DiceLoss(nn.Module):
    def __init__(self, smooth=1.0):
        super().__init__()
        self.smooth = smooth

    def forward(self, logits, target):
        probs = F.softmax(logits, dim=1)
        target_1h = make_one_hot(target.unsqueeze(1), probs.size(1))
        inter = (probs * target_1h).sum(dim=(0, 2, 3))
        denom = probs.sum(dim=(0, 2, 3)) + target_1h.sum(dim=(0, 2, 3))
        return 1 - ((2 * inter + self.smooth) / (denom + self.smooth)).mean()


class ShapesDataset(Dataset):
    def __init__(self, n=40, size=24):
        self.images, self.masks = [], []
        yy, xx = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
        for _ in range(n):
            cy, cx, r = torch.randint(6, size - 6, (2,)).tolist() + [torch.randint(3, 6, (1,)).item()]
            disk = ((yy - cy) ** 2 + (xx - cx) ** 2) < r ** 2
            mask = disk.long() + (xx > size - 5).long()
            img = mask.float().unsqueeze(0).repeat(3, 1, 1) + 0.3 * torch.randn(3, size, size)
            self.images.append(img)
            self.masks.append(mask.clamp(max=NUM_CLASSES - 1))

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return self.images[i], self.masks[i]


def main():
    loader = DataLoader(ShapesDataset(), batch_size=8, shuffle=True)
    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(),
        nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(),
        nn.Conv2d(16, NUM_CLASSES, 1),
    ).to(device)
    ce, dice = nn.CrossEntropyLoss(), DiceLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    for epoch in range(3):
        for img, mask in loader:
            img, mask = img.to(device), mask.to(device)
            out = model(img)
            loss = ce(out, mask) + dice(out, mask)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch} loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
