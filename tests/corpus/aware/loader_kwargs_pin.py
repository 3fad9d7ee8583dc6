"""A training script with input-pipeline settings chosen by device: workers and pinned
memory in a kwargs dict only with CUDA, non_blocking copies, cudnn.benchmark."""

import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class Waveforms(Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.labels = torch.randint(0, 3, (n,), generator=g)
        t = torch.linspace(0, 1, 48)
        freq = (self.labels.float() + 1).unsqueeze(1) * 3
        self.signals = torch.sin(6.283 * freq * t) + 0.3 * torch.randn(n, 48, generator=g)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.signals[i].unsqueeze(0), self.labels[i]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv1d(1, 8, 7, padding=3), nn.ReLU(), nn.AdaptiveMaxPool1d(6))
        self.fc = nn.Linear(48, 3)

    def forward(self, x):
        return self.fc(self.conv(x).flatten(1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=24)
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    use_cuda = torch.cuda.is_available()
    device = torch.device("cuda" if use_cuda else "cpu")
    torch.manual_seed(0)
    if use_cuda:
        torch.backends.cudnn.benchmark = True
    kwargs = {"num_workers": args.workers, "pin_memory": True} if use_cuda else {}
    train_loader = DataLoader(Waveforms(144, 0), batch_size=args.batch_size, shuffle=True, **kwargs)
    val_loader = DataLoader(Waveforms(48, 1), batch_size=args.batch_size, **kwargs)
    model = Net().to(device)
    criterion = nn.CrossEntropyLoss().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
    for epoch in range(args.epochs):
        model.train()
        for signals, labels in train_loader:
            signals = signals.to(device, non_blocking=True)
            labels = labels.to(device, non_blocking=True)
            optimizer.zero_grad()
            loss = criterion(model(signals), labels)
            loss.backward()
            optimizer.step()
        model.eval()
        total = torch.zeros((), device=device)
        with torch.no_grad():
            for signals, labels in val_loader:
                signals, labels = signals.to(device), labels.to(device)
                total += criterion(model(signals), labels) * labels.size(0)
        val_loss = (total / len(val_loader.dataset)).item()
        print(f"epoch {epoch} val loss {val_loss:.4f}")
    print(f"final loss {val_loss:.8f}")


if __name__ == "__main__":
    main()
