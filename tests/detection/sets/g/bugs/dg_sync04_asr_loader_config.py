# source: https://github.com/NVIDIA-NeMo/Speech/issues/1204
# area: transfer & sync
# bug: the dataset config defaults to num_workers=0 and pin_memory=False, so log-mel featurization runs in the training process between steps and the GPU sits idle waiting for every batch
import math
import torch
import torch.nn as nn
from dataclasses import dataclass
from torch.utils.data import Dataset, DataLoader


@dataclass
class AudioDatasetConfig:
    num_utterances: int = 48
    sample_rate: int = 16000
    max_seconds: float = 1.0
    n_fft: int = 400
    hop_length: int = 160
    n_mels: int = 40
    batch_size: int = 16
    shuffle: bool = True
    num_workers: int = 0  # expect[w]: any
    pin_memory: bool = False  # expect[w]: any


def mel_filterbank(n_fft, n_mels, sample_rate):
    n_freqs = n_fft // 2 + 1
    hz = torch.linspace(0, sample_rate / 2, n_freqs)
    mel = 2595.0 * torch.log10(1.0 + hz / 700.0)
    edges = torch.linspace(mel.min().item(), mel.max().item(), n_mels + 2)
    fb = torch.zeros(n_mels, n_freqs)
    for m in range(n_mels):
        lo, mid, hi = edges[m], edges[m + 1], edges[m + 2]
        up = (mel - lo) / (mid - lo)
        down = (hi - mel) / (hi - mid)
        fb[m] = torch.clamp(torch.minimum(up, down), min=0.0)
    return fb


class SyntheticSpeechDataset(Dataset):
    def __init__(self, cfg):
        self.cfg = cfg
        self.fb = mel_filterbank(cfg.n_fft, cfg.n_mels, cfg.sample_rate)
        self.window = torch.hann_window(cfg.n_fft)

    def __len__(self):
        return self.cfg.num_utterances

    def __getitem__(self, idx):
        g = torch.Generator().manual_seed(idx)
        n = int(self.cfg.sample_rate * self.cfg.max_seconds)
        t = torch.arange(n) / self.cfg.sample_rate
        f0 = 100 + 20 * (idx % 7)
        wav = torch.sin(2 * math.pi * f0 * t) + 0.05 * torch.randn(n, generator=g)
        spec = torch.stft(wav, self.cfg.n_fft, self.cfg.hop_length,
                          window=self.window, return_complex=True).abs() ** 2
        feats = torch.log(self.fb @ spec + 1e-6)
        return feats, idx % 10


def build_dataloader(cfg: AudioDatasetConfig):
    return DataLoader(SyntheticSpeechDataset(cfg), batch_size=cfg.batch_size,
                      shuffle=cfg.shuffle, num_workers=cfg.num_workers,
                      pin_memory=cfg.pin_memory, drop_last=True)


class ConvEncoderClassifier(nn.Module):
    def __init__(self, n_mels, classes=10, channels=64):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Conv1d(n_mels, channels, 5, padding=2), nn.ReLU(),
            nn.Conv1d(channels, channels, 5, padding=2, stride=2), nn.ReLU())
        self.decoder = nn.Linear(channels, classes)

    def forward(self, feats):
        return self.decoder(self.encoder(feats).mean(dim=-1))


def train(cfg, epochs=2):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    loader = build_dataloader(cfg)
    model = ConvEncoderClassifier(cfg.n_mels).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(epochs):
        total = torch.zeros((), device=device)
        for feats, labels in loader:
            feats, labels = feats.to(device), labels.to(device)
            loss = loss_fn(model(feats), labels)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += loss.detach()
        print(f"epoch {epoch}: mean loss {total.item() / len(loader):.4f}")


if __name__ == "__main__":
    torch.manual_seed(0)
    train(AudioDatasetConfig())
