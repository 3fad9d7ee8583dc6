# source: https://github.com/pytorch/pytorch/issues/77159
# area: transfer & sync
# bug: the Dataset moves every sample to the GPU inside __getitem__, which forbids worker processes and turns loading into many tiny per-sample host-to-device copies
import math

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class KeywordSpottingDataset(Dataset):
    """Synthetic one-second clips; each sample is turned into a log-spectrogram on the fly."""

    def __init__(self, n_clips, n_keywords, device, sample_rate=4000, n_fft=256, hop=128):
        g = torch.Generator().manual_seed(0)
        self.labels = torch.randint(0, n_keywords, (n_clips,), generator=g)
        self.freqs = 200.0 + 150.0 * self.labels.float()
        self.noise = 0.1 * torch.randn(n_clips, sample_rate, generator=g)
        self.sample_rate = sample_rate
        self.n_fft = n_fft
        self.hop = hop
        self.window = torch.hann_window(n_fft)
        self.device = device

    def __len__(self):
        return len(self.labels)

    def _waveform(self, idx):
        t = torch.arange(self.sample_rate) / self.sample_rate
        return torch.sin(2 * math.pi * self.freqs[idx] * t) + self.noise[idx]

    def __getitem__(self, idx):
        wav = self._waveform(idx)
        spec = torch.stft(wav, self.n_fft, self.hop, window=self.window, return_complex=True).abs()
        feats = torch.log1p(spec).unsqueeze(0)
        return feats.to(self.device), self.labels[idx].to(self.device)  # expect[w]: any


class KWSNet(nn.Module):
    def __init__(self, n_keywords):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        )
        self.fc = nn.Linear(32, n_keywords)

    def forward(self, x):
        return self.fc(self.body(x).flatten(1))


def fit(epochs=2, n_keywords=6):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dataset = KeywordSpottingDataset(128, n_keywords, device)
    loader = DataLoader(dataset, batch_size=32, shuffle=True, num_workers=0)  # expect[w]: any
    model = KWSNet(n_keywords).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    for epoch in range(epochs):
        correct = torch.zeros((), dtype=torch.long, device=device)
        for feats, labels in loader:
            logits = model(feats)
            loss = nn.functional.cross_entropy(logits, labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            correct += (logits.argmax(1) == labels).sum()
        print(f"epoch {epoch}: train acc {correct.item() / len(dataset):.3f}")


if __name__ == "__main__":
    fit()
