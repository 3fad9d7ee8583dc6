# twin of: bugs/de_dtype06_gpu_resize_uint8.py
# area: dtype
# correct: frames are converted to float on the GPU before bilinear resizing, a dtype that interpolate supports on every device
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class ClipDataset(Dataset):
    """Returns raw uint8 clips (T, C, H, W) as a video decoder would."""

    def __init__(self, n=16, frames=4, size=72):
        g = torch.Generator().manual_seed(0)
        self.clips = torch.randint(0, 256, (n, frames, 3, size, size), dtype=torch.uint8, generator=g)
        self.labels = torch.randint(0, 4, (n,), generator=g)

    def __len__(self):
        return len(self.clips)

    def __getitem__(self, i):
        return self.clips[i], self.labels[i]


class GpuVideoTransform:
    def __init__(self, out_size=48, mean=(0.45, 0.45, 0.45), std=(0.225, 0.225, 0.225)):
        self.out_size = out_size
        self.mean = torch.tensor(mean, device=device).view(1, 3, 1, 1)
        self.std = torch.tensor(std, device=device).view(1, 3, 1, 1)

    def __call__(self, clips):
        b, t, c, h, w = clips.shape
        frames = clips.reshape(b * t, c, h, w).float().div_(255.0)
        frames = F.interpolate(frames, size=(self.out_size, self.out_size), mode="bilinear", align_corners=False)
        frames = (frames - self.mean) / self.std
        return frames.view(b, t, c, self.out_size, self.out_size)


class FrameAvgClassifier(nn.Module):
    def __init__(self, num_classes=4):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.fc = nn.Linear(16, num_classes)

    def forward(self, x):
        b, t = x.shape[:2]
        f = self.conv(x.flatten(0, 1)).flatten(1)
        return self.fc(f.view(b, t, -1).mean(1))


def train_one_epoch(model, loader, transform, opt):
    model.train()
    running = torch.zeros((), device=device)
    for clips, labels in loader:
        clips = clips.to(device, non_blocking=True)
        labels = labels.to(device, non_blocking=True)
        x = transform(clips)
        loss = F.cross_entropy(model(x), labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        running += loss.detach()
    return (running / len(loader)).item()


if __name__ == "__main__":
    torch.manual_seed(0)
    loader = DataLoader(ClipDataset(), batch_size=4, shuffle=True, pin_memory=torch.cuda.is_available())
    model = FrameAvgClassifier().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    transform = GpuVideoTransform()
    for epoch in range(2):
        print(f"epoch {epoch} loss {train_one_epoch(model, loader, transform, opt):.4f}")
