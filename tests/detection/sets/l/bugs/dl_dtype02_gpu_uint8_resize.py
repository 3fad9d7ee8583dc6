# source: https://github.com/pytorch/pytorch/pull/90771
# area: dtype
# bug: bilinear F.interpolate on a uint8 image batch only has a CPU kernel; once the augmentation runs on CUDA tensors the upsample op is not implemented for 'Byte'
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class RawImageDataset(Dataset):
    """Decoded frames kept as uint8 HWC arrays, like the output of an image decoder."""

    def __init__(self, n=48, h=72, w=96, num_classes=5, seed=0):
        rng = np.random.default_rng(seed)
        self.images = rng.integers(0, 256, size=(n, h, w, 3), dtype=np.uint8)
        self.labels = rng.integers(0, num_classes, size=(n,))

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        img = torch.from_numpy(self.images[i]).permute(2, 0, 1).contiguous()
        return img, int(self.labels[i])


class GpuAugment(nn.Module):
    """Batch-level resize + flip + normalize, done on the accelerator to relieve the loader."""

    def __init__(self, out_size=(48, 48), mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225)):
        super().__init__()
        self.out_size = out_size
        self.register_buffer("mean", torch.tensor(mean).view(1, 3, 1, 1) * 255.0)
        self.register_buffer("std", torch.tensor(std).view(1, 3, 1, 1) * 255.0)

    @torch.no_grad()
    def forward(self, images_u8, train=True):
        resized = F.interpolate(images_u8, size=self.out_size, mode="bilinear", align_corners=False)  # expect: any
        if train:
            flip = torch.rand(resized.shape[0], 1, 1, 1, device=resized.device) < 0.5
            resized = torch.where(flip, resized.flip(-1), resized)
        return (resized.float() - self.mean) / self.std


def build_classifier(num_classes=5):
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        nn.Linear(32, num_classes),
    )


def train_one_epoch(model, augment, loader, optimizer, device):
    model.train()
    total = torch.zeros((), device=device)
    for images, labels in loader:
        images = images.to(device)
        labels = labels.to(device)
        x = augment(images, train=True)
        loss = F.cross_entropy(model(x), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        total += loss.detach()
    return (total / len(loader)).item()


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    loader = DataLoader(RawImageDataset(), batch_size=16, shuffle=True, num_workers=0)
    model = build_classifier().to(device)
    augment = GpuAugment().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for epoch in range(2):
        avg = train_one_epoch(model, augment, loader, optimizer, device)
        print(f"epoch {epoch}: loss {avg:.4f}")


if __name__ == "__main__":
    main()
