# source: https://github.com/janelia-cellmap/dacapo/pull/312
# area: dtype
# bug: the numpy batch is float64 and is moved to the device before being cast with .float(); an MPS device has no float64 and rejects the copy (on CUDA it doubles the bytes sent every step)
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def pick_device():
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


class RandomVolumeProvider:
    """Stand-in for a gunpowder pipeline: returns numpy arrays per request."""

    def __init__(self, shape=(16, 16, 16), seed=0):
        self.rng = np.random.default_rng(seed)
        self.shape = shape

    def request_batch(self, batch_size):
        raw = self.rng.integers(0, 256, size=(batch_size, 1, *self.shape), dtype=np.uint8)
        raw = (raw / 255.0 - 0.5) * 2.0
        raw += self.rng.normal(0.0, 0.05, size=raw.shape)
        labels = (raw[:, 0] > 0.2).astype(np.uint8)
        return {"raw": raw, "labels": labels}


class UNet3DLite(nn.Module):
    def __init__(self, ch=8, classes=2):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv3d(1, ch, 3, padding=1), nn.ReLU(), nn.Conv3d(ch, ch, 3, padding=1), nn.ReLU())
        self.down = nn.Sequential(nn.MaxPool3d(2), nn.Conv3d(ch, 2 * ch, 3, padding=1), nn.ReLU())
        self.up = nn.ConvTranspose3d(2 * ch, ch, 2, stride=2)
        self.head = nn.Conv3d(2 * ch, classes, 1)

    def forward(self, x):
        e = self.enc(x)
        u = self.up(self.down(e))
        return self.head(torch.cat([e, u], dim=1))


class GunpowderTrainer:
    def __init__(self, model, provider, device, batch_size=2, lr=1e-3):
        self.model = model.to(device)
        self.provider = provider
        self.device = device
        self.batch_size = batch_size
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=lr)

    def _to_tensors(self, batch):
        raw = torch.as_tensor(batch["raw"]).to(self.device).float()  # expect: any
        target = torch.as_tensor(batch["labels"]).to(self.device).long()
        return raw, target

    def iterate(self, iterations):
        self.model.train()
        losses = []
        for _ in range(iterations):
            raw, target = self._to_tensors(self.provider.request_batch(self.batch_size))
            loss = F.cross_entropy(self.model(raw), target)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            losses.append(loss.detach())
        return torch.stack(losses).mean().item()


def main():
    device = pick_device()
    trainer = GunpowderTrainer(UNet3DLite(), RandomVolumeProvider(), device)
    for epoch in range(2):
        print(f"epoch {epoch}: mean loss {trainer.iterate(3):.4f}")


if __name__ == "__main__":
    main()
