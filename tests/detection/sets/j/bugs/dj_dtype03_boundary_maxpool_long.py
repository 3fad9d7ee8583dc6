# source: https://github.com/pytorch/pytorch/issues/107412
# area: dtype
# bug: max_pool2d is run on the int64 instance-id map; CUDA has no integer max_pool2d kernel, so the boundary weighting crashes on the GPU
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class BlobInstances(Dataset):
    """Synthetic instance masks: a few rectangles per image."""

    def __init__(self, n, size=48, num_classes=3, seed=0):
        rng = np.random.default_rng(seed)
        self.images, self.instances, self.semantics = [], [], []
        for _ in range(n):
            inst = np.zeros((size, size), dtype=np.int64)
            sem = np.zeros((size, size), dtype=np.int64)
            for k in range(1, rng.integers(2, 5)):
                y, x = rng.integers(0, size - 12, 2)
                h, w = rng.integers(6, 12, 2)
                inst[y:y + h, x:x + w] = k
                sem[y:y + h, x:x + w] = rng.integers(1, num_classes)
            img = sem[None].astype(np.float32) + 0.3 * rng.standard_normal((3, size, size)).astype(np.float32)
            self.images.append(img)
            self.instances.append(inst)
            self.semantics.append(sem)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return torch.from_numpy(self.images[i]), torch.from_numpy(self.instances[i]), torch.from_numpy(self.semantics[i])


def boundary_weights(instance_ids, kernel=3, boundary_weight=5.0):
    ids = instance_ids.unsqueeze(1)
    pad = kernel // 2
    dilated = F.max_pool2d(ids, kernel, stride=1, padding=pad)  # expect: any
    eroded = -F.max_pool2d(-ids, kernel, stride=1, padding=pad)
    edge = (dilated != eroded).squeeze(1)
    return 1.0 + boundary_weight * edge.float()


class TinySegNet(nn.Module):
    def __init__(self, num_classes=3):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(),
            nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(),
            nn.Conv2d(16, num_classes, 1),
        )

    def forward(self, x):
        return self.body(x)


def train(epochs=2):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    loader = DataLoader(BlobInstances(32), batch_size=8, shuffle=True,
                        pin_memory=device.type == "cuda")
    model = TinySegNet().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(epochs):
        running = torch.zeros((), device=device)
        for img, inst, sem in loader:
            img = img.to(device, non_blocking=True)
            inst = inst.to(device, non_blocking=True)
            sem = sem.to(device, non_blocking=True)
            weights = boundary_weights(inst)
            loss = (F.cross_entropy(model(img), sem, reduction="none") * weights).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            running += loss.detach()
        print(f"epoch {epoch}: weighted CE {(running / len(loader)).item():.4f}")


if __name__ == "__main__":
    train()
