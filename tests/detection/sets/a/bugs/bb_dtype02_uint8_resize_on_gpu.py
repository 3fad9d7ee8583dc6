# source: https://github.com/UX-Decoder/Segment-Everything-Everywhere-All-At-Once/issues/34
# area: dtype
# bug: GPU-side augmentation resizes the raw uint8 batch with bilinear interpolate before converting to float; CPU has a uint8 bilinear kernel, CUDA does not ("upsample_bilinear2d" not implemented for 'Byte')
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class RawImageDataset(Dataset):
    """Stands in for a decoder that yields HWC uint8 frames of varying size."""

    def __init__(self, n=32):
        self.items = [(torch.randint(0, 256, (40, 48, 3), dtype=torch.uint8), i % 5) for i in range(n)]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, idx):
        img, label = self.items[idx]
        return img.permute(2, 0, 1).contiguous(), label


class DeviceAugment:
    """Resize + flip on the accelerator to keep the dataloader workers light."""

    def __init__(self, size=32):
        self.size = size
        self.mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
        self.std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)

    def __call__(self, imgs):
        imgs = F.interpolate(imgs, size=(self.size, self.size), mode="bilinear", align_corners=False)  # expect: any
        if torch.rand(()) < 0.5:
            imgs = imgs.flip(-1)
        imgs = imgs.float().div_(255.0)
        return (imgs - self.mean.to(imgs.device)) / self.std.to(imgs.device)


class SmallCNN(nn.Module):
    def __init__(self, num_classes=5):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Linear(32, num_classes)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


loader = DataLoader(RawImageDataset(), batch_size=8, shuffle=True)
augment = DeviceAugment(size=32)
model = SmallCNN().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

for epoch in range(2):
    for imgs, labels in loader:
        imgs = imgs.to(device, non_blocking=True)
        labels = labels.to(device, non_blocking=True)
        inputs = augment(imgs)
        loss = F.cross_entropy(model(inputs), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch} loss {loss.item():.4f}")
