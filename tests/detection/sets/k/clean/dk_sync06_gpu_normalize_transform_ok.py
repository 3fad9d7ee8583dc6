# twin of: bugs/dk_sync06_gpu_normalize_transform.py
# area: transfer & sync
# correct: mean/std are registered as buffers once, so they move to the GPU with the module and no per-batch host->device copy happens
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

IMAGENET_MEAN = [0.485, 0.456, 0.406]
IMAGENET_STD = [0.229, 0.224, 0.225]


class RandomImages(Dataset):
    def __init__(self, n=128, size=48, n_classes=5):
        g = torch.Generator().manual_seed(0)
        self.images = torch.randint(0, 256, (n, 3, size, size), dtype=torch.uint8, generator=g)
        self.labels = torch.randint(0, n_classes, (n,), generator=g)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.images[i], self.labels[i]


class ToFloat(nn.Module):
    def forward(self, img):
        return img.float().div_(255.0)


class RandomHorizontalFlip(nn.Module):
    def __init__(self, p=0.5):
        super().__init__()
        self.p = p

    def forward(self, img):
        flip = torch.rand(img.shape[0], 1, 1, 1, device=img.device) < self.p
        return torch.where(flip, img.flip(-1), img)


class Normalize(nn.Module):
    def __init__(self, mean, std):
        super().__init__()
        self.register_buffer("mean", torch.tensor(mean, dtype=torch.float32).view(-1, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(std, dtype=torch.float32).view(-1, 1, 1), persistent=False)

    def forward(self, img):
        return (img - self.mean) / self.std


def build_gpu_transforms():
    return nn.Sequential(ToFloat(), RandomHorizontalFlip(), Normalize(IMAGENET_MEAN, IMAGENET_STD)).to(device)


class SmallCNN(nn.Module):
    def __init__(self, n_classes=5):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        )
        self.fc = nn.Linear(32, n_classes)

    def forward(self, x):
        return self.fc(self.features(x).flatten(1))


def train(epochs=2):
    loader = DataLoader(RandomImages(), batch_size=32, shuffle=True, pin_memory=device.type == "cuda")
    transforms = build_gpu_transforms()
    model = SmallCNN().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for epoch in range(epochs):
        running = torch.zeros((), device=device)
        for images, labels in loader:
            images = images.to(device, non_blocking=True)
            labels = labels.to(device, non_blocking=True)
            x = transforms(images)
            loss = F.cross_entropy(model(x), labels)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            running += loss.detach()
        print(f"epoch {epoch} mean loss {(running / len(loader)).item():.4f}")


if __name__ == "__main__":
    torch.manual_seed(0)
    train()
