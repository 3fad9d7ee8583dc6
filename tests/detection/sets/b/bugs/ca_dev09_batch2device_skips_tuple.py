# source: https://github.com/catalyst-team/catalyst/pull/214
# area: device placement
# bug: any2device only moves top-level tensors; the nested (image, meta) tuple under "features" is passed through untouched and stays on the CPU
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class PatientDataset(Dataset):
    def __init__(self, n=80):
        self.images = torch.randn(n, 3, 12, 12)
        self.meta = torch.randn(n, 5)
        self.targets = torch.randint(0, 2, (n,))

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, i):
        return {"features": (self.images[i], self.meta[i]), "targets": self.targets[i]}


class FusionNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.cnn = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.meta_mlp = nn.Sequential(nn.Linear(5, 8), nn.ReLU())
        self.head = nn.Linear(16, 2)

    def forward(self, image, meta):
        return self.head(torch.cat([self.cnn(image), self.meta_mlp(meta)], dim=1))


def any2device(batch, device):
    out = {}
    for key, value in batch.items():
        if torch.is_tensor(value):
            out[key] = value.to(device, non_blocking=True)
        else:
            out[key] = value  # expect: any
    return out


class Runner:
    def __init__(self, model, optimizer):
        self.model, self.optimizer = model, optimizer

    def _run_batch(self, batch):
        batch = any2device(batch, device)
        logits = self.model(*batch["features"])
        loss = F.cross_entropy(logits, batch["targets"])
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.item()

    def run_epoch(self, loader):
        self.model.train()
        return sum(self._run_batch(b) for b in loader) / len(loader)


def main():
    loader = DataLoader(PatientDataset(), batch_size=16, shuffle=True)
    model = FusionNet().to(device)
    runner = Runner(model, torch.optim.Adam(model.parameters(), lr=1e-3))
    for epoch in range(3):
        print(f"epoch {epoch} loss {runner.run_epoch(loader):.4f}")


if __name__ == "__main__":
    main()
