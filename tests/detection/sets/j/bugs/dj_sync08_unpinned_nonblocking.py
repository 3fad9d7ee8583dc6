# source: https://discuss.pytorch.org/t/should-we-set-non-blocking-to-true/38234/4
# area: transfer & sync
# bug: batches come from a loader with pin_memory=False, so the non_blocking=True copies start from pageable memory and cannot overlap with compute
import math

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class KeywordSpottingSet(Dataset):
    """Synthetic log-mel clips: each keyword is a tone pattern plus noise."""

    def __init__(self, n_clips=128, n_mels=40, n_frames=101, n_keywords=8, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.labels = torch.randint(0, n_keywords, (n_clips,), generator=g)
        t = torch.linspace(0, 1, n_frames)
        mel = torch.arange(n_mels).float().unsqueeze(1)
        clips = []
        for k in self.labels.tolist():
            pattern = torch.sin(2 * math.pi * (k + 1) * t) * torch.exp(-((mel - 4 * k) ** 2) / 20.0)
            clips.append(pattern + 0.3 * torch.randn(n_mels, n_frames, generator=g))
        self.clips = torch.stack(clips).unsqueeze(1)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.clips[i], self.labels[i]


class KWSNet(nn.Module):
    def __init__(self, n_keywords=8):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, (5, 5), padding=2), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, (3, 3), padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.gru = nn.GRU(32 * 10, 64, batch_first=True)
        self.fc = nn.Linear(64, n_keywords)

    def forward(self, x):
        f = self.features(x)
        b, c, m, t = f.shape
        seq = f.permute(0, 3, 1, 2).reshape(b, t, c * m)
        _, h = self.gru(seq)
        return self.fc(h[-1])


def run_epoch(model, loader, opt, loss_fn, device):
    model.train()
    total = torch.zeros((), device=device)
    correct = torch.zeros((), device=device, dtype=torch.long)
    for mels, labels in loader:
        mels = mels.to(device, non_blocking=True)  # expect[p]: any
        labels = labels.to(device, non_blocking=True)
        logits = model(mels)
        loss = loss_fn(logits, labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        total += loss.detach()
        correct += (logits.argmax(1) == labels).sum()
    return total / len(loader), correct.float() / len(loader.dataset)


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    loader = DataLoader(KeywordSpottingSet(), batch_size=64, shuffle=True,
                        num_workers=2, pin_memory=False)  # expect[p]: any
    model = KWSNet().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(2):
        loss, acc = run_epoch(model, loader, opt, loss_fn, device)
        print(f"epoch {epoch}: loss {loss.item():.3f} acc {acc.item():.3f}")


if __name__ == "__main__":
    main()
