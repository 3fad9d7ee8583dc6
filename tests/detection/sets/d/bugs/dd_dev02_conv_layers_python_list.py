# source: https://github.com/Lightning-AI/pytorch-lightning/issues/2623
# area: device placement
# bug: the Conv1d encoder layers are kept in a plain Python list, so model.to(device) never moves them and the GPU waveform hits CPU conv weights
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RawAudioClassifier(nn.Module):
    """Strided 1-D conv encoder over raw waveforms followed by an MLP head."""

    def __init__(self, num_classes, out_channels=64, kernel_size=4, stride=4):
        super().__init__()
        n_layers = int(math.log2(out_channels))
        self.conv_layers = []  # expect: any
        for idx in range(n_layers):
            self.conv_layers.append(
                nn.Conv1d(
                    in_channels=2 ** idx,
                    out_channels=2 ** (idx + 1),
                    kernel_size=kernel_size,
                    stride=stride if idx < 3 else 1,
                    padding=0 if idx < 3 else kernel_size // 2,
                )
            )
        self.fc1 = nn.Linear(out_channels, 32)
        self.fc2 = nn.Linear(32, num_classes)

    def forward(self, wav):
        x = wav.unsqueeze(1)
        for conv in self.conv_layers:
            x = F.relu(conv(x))
        x = x.mean(dim=-1)
        return self.fc2(F.relu(self.fc1(x)))


class SyntheticToneDataset(torch.utils.data.Dataset):
    def __init__(self, n_items=64, length=1024, num_classes=4, sample_rate=8000):
        g = torch.Generator().manual_seed(1)
        self.labels = torch.randint(0, num_classes, (n_items,), generator=g)
        t = torch.arange(length) / sample_rate
        freqs = 200.0 * (self.labels.float() + 1.0)
        self.wavs = torch.sin(2 * math.pi * freqs[:, None] * t[None, :])
        self.wavs += 0.1 * torch.randn(n_items, length, generator=g)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.wavs[i], self.labels[i]


def run_epoch(model, loader, optimizer, device):
    model.train()
    total = torch.zeros((), device=device)
    for wav, label in loader:
        wav, label = wav.to(device), label.to(device)
        logits = model(wav)
        loss = F.cross_entropy(logits, label)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.detach()
    return (total / len(loader)).item()


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    ds = SyntheticToneDataset()
    loader = torch.utils.data.DataLoader(ds, batch_size=16, shuffle=True)
    model = RawAudioClassifier(num_classes=4).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    for epoch in range(2):
        print(f"epoch {epoch} loss {run_epoch(model, loader, optimizer, device):.3f}")


if __name__ == "__main__":
    main()
