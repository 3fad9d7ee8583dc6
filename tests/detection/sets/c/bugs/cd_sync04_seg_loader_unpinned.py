# source: https://github.com/constantinpape/torch-em/pull/357
# area: transfer & sync
# bug: batches are copied with non_blocking=True but the DataLoader does not pin memory, so every copy is a pageable, blocking transfer that cannot overlap compute
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class RandomBlobSegmentation(Dataset):
    def __init__(self, n_samples=48, patch_shape=(64, 64), seed=0):
        self.n_samples = n_samples
        self.patch_shape = patch_shape
        self.seed = seed

    def __len__(self):
        return self.n_samples

    def __getitem__(self, index):
        g = torch.Generator().manual_seed(self.seed + index)
        h, w = self.patch_shape
        yy, xx = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
        cy, cx = torch.randint(8, h - 8, (2,), generator=g)
        r = torch.randint(4, 16, (1,), generator=g)
        mask = (((yy - cy) ** 2 + (xx - cx) ** 2) < r ** 2).float()
        raw = mask + 0.3 * torch.randn(h, w, generator=g)
        return raw[None], mask[None]


def get_data_loader(dataset, batch_size, **loader_kwargs):
    shuffle = loader_kwargs.pop("shuffle", True)
    return DataLoader(dataset, batch_size=batch_size, shuffle=shuffle, **loader_kwargs)  # expect[pin]: any


class SmallUNet(nn.Module):
    def __init__(self, c=16):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(1, c, 3, padding=1), nn.ReLU(), nn.Conv2d(c, c, 3, padding=1), nn.ReLU())
        self.down = nn.MaxPool2d(2)
        self.mid = nn.Sequential(nn.Conv2d(c, 2 * c, 3, padding=1), nn.ReLU())
        self.up = nn.ConvTranspose2d(2 * c, c, 2, stride=2)
        self.dec = nn.Sequential(nn.Conv2d(2 * c, c, 3, padding=1), nn.ReLU(), nn.Conv2d(c, 1, 1))

    def forward(self, x):
        e = self.enc(x)
        m = self.up(self.mid(self.down(e)))
        return self.dec(torch.cat([e, m], dim=1))


class DefaultTrainer:
    def __init__(self, model, train_loader, device, lr=1e-3):
        self.device = device
        self.model = model.to(device)
        self.train_loader = train_loader
        self.loss = nn.BCEWithLogitsLoss()
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=lr)
        self._iteration = 0

    def _train_epoch(self):
        self.model.train()
        epoch_loss = torch.zeros((), device=self.device)
        for x, y in self.train_loader:
            x = x.to(self.device, non_blocking=True)  # expect[pin]: any
            y = y.to(self.device, non_blocking=True)
            self.optimizer.zero_grad(set_to_none=True)
            loss = self.loss(self.model(x), y)
            loss.backward()
            self.optimizer.step()
            epoch_loss += loss.detach()
            self._iteration += 1
        return epoch_loss / len(self.train_loader)

    def fit(self, epochs):
        history = [self._train_epoch() for _ in range(epochs)]
        return torch.stack(history).cpu()


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    loader = get_data_loader(RandomBlobSegmentation(), batch_size=8, num_workers=2)
    trainer = DefaultTrainer(SmallUNet(), loader, device)
    losses = trainer.fit(epochs=2)
    print("epoch losses:", [round(v, 4) for v in losses.tolist()], "iterations:", trainer._iteration)
