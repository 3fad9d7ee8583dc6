# source: https://github.com/constantinpape/torch-em/issues/356
# area: transfer & sync
# bug: the trainer copies batches with non_blocking=True but the loader helper defaults to pageable (unpinned) memory, so every copy is still synchronous
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class RandomSegmentationDataset(Dataset):
    def __init__(self, n_samples=24, patch_shape=(32, 32), n_classes=3):
        self.n_samples = n_samples
        self.patch_shape = patch_shape
        self.n_classes = n_classes

    def __len__(self):
        return self.n_samples

    def __getitem__(self, idx):
        g = torch.Generator().manual_seed(idx)
        raw = torch.rand(1, *self.patch_shape, generator=g)
        labels = (raw[0] * self.n_classes).long().clamp_max(self.n_classes - 1)
        return raw, labels


def get_data_loader(dataset, batch_size, **loader_kwargs):
    pin_memory = loader_kwargs.pop("pin_memory", False)  # expect[pin]: any
    return DataLoader(dataset, batch_size=batch_size, pin_memory=pin_memory, **loader_kwargs)


class TinyUNet(nn.Module):
    def __init__(self, in_ch=1, n_classes=3, f=16):
        super().__init__()
        self.enc1 = nn.Sequential(nn.Conv2d(in_ch, f, 3, padding=1), nn.ReLU(), nn.Conv2d(f, f, 3, padding=1), nn.ReLU())
        self.enc2 = nn.Sequential(nn.Conv2d(f, 2 * f, 3, padding=1), nn.ReLU())
        self.up = nn.ConvTranspose2d(2 * f, f, 2, stride=2)
        self.dec = nn.Sequential(nn.Conv2d(2 * f, f, 3, padding=1), nn.ReLU(), nn.Conv2d(f, n_classes, 1))

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(F.max_pool2d(e1, 2))
        return self.dec(torch.cat([self.up(e2), e1], dim=1))


class DefaultTrainer:
    def __init__(self, model, train_loader, lr=1e-3, device=None):
        self.device = device or torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = model.to(self.device)
        self.train_loader = train_loader
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=lr)

    def _to_device(self, x, y):
        return x.to(self.device, non_blocking=True), y.to(self.device, non_blocking=True)  # expect[pin]: any

    def _train_epoch(self):
        self.model.train()
        total = torch.zeros((), device=self.device)
        for x, y in self.train_loader:
            x, y = self._to_device(x, y)
            self.optimizer.zero_grad(set_to_none=True)
            loss = F.cross_entropy(self.model(x), y)
            loss.backward()
            self.optimizer.step()
            total += loss.detach()
        return (total / len(self.train_loader)).item()

    def fit(self, n_epochs):
        for epoch in range(n_epochs):
            print(f"epoch {epoch}: train loss {self._train_epoch():.4f}")


def main():
    torch.manual_seed(0)
    loader = get_data_loader(RandomSegmentationDataset(), batch_size=8, shuffle=True, num_workers=2)
    trainer = DefaultTrainer(TinyUNet(), loader)
    trainer.fit(n_epochs=2)


if __name__ == "__main__":
    main()
