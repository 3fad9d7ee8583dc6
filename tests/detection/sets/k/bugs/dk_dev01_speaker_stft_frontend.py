# source: https://github.com/usc-sail/gard-adversarial-speaker-id/issues/2
# area: device placement
# bug: the STFT window is made with torch.hann_window() inside forward on the CPU while the waveform batch is on the GPU, so torch.stft fails with a device mismatch
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class AudioHParams:
    sample_rate: int = 16000
    n_fft: int = 512
    win_length: int = 400
    hop_length: int = 160
    n_mels: int = 40
    n_speakers: int = 10
    emb_dim: int = 64


def hz_to_mel(f):
    return 2595.0 * math.log10(1.0 + f / 700.0)


def mel_filterbank(hp):
    n_freqs = hp.n_fft // 2 + 1
    mel_pts = torch.linspace(hz_to_mel(0.0), hz_to_mel(hp.sample_rate / 2), hp.n_mels + 2)
    hz_pts = 700.0 * (10 ** (mel_pts / 2595.0) - 1.0)
    freqs = torch.linspace(0, hp.sample_rate / 2, n_freqs)
    lower, center, upper = hz_pts[:-2, None], hz_pts[1:-1, None], hz_pts[2:, None]
    up = (freqs[None] - lower) / (center - lower)
    down = (upper - freqs[None]) / (upper - center)
    return torch.clamp(torch.minimum(up, down), min=0.0)


class LogMelFrontend(nn.Module):
    def __init__(self, hp):
        super().__init__()
        self.hp = hp
        self.register_buffer("mel_fb", mel_filterbank(hp))

    def forward(self, wav):
        spec = torch.stft(
            wav,
            n_fft=self.hp.n_fft,
            hop_length=self.hp.hop_length,
            win_length=self.hp.win_length,
            window=torch.hann_window(self.hp.win_length),  # expect: any
            return_complex=True,
        )
        power = spec.abs().pow(2)
        mel = torch.matmul(self.mel_fb, power)
        return torch.log(mel + 1e-6)


class SpeakerEncoder(nn.Module):
    def __init__(self, hp):
        super().__init__()
        self.prep = LogMelFrontend(hp)
        self.convs = nn.Sequential(
            nn.Conv1d(hp.n_mels, 128, 5, padding=2), nn.ReLU(), nn.BatchNorm1d(128),
            nn.Conv1d(128, 128, 3, padding=1), nn.ReLU(), nn.BatchNorm1d(128),
        )
        self.proj = nn.Linear(256, hp.emb_dim)
        self.classifier = nn.Linear(hp.emb_dim, hp.n_speakers)

    def encode(self, wav):
        feats = self.prep(wav.squeeze(1))
        feats = feats - feats.mean(dim=-1, keepdim=True)
        h = self.convs(feats)
        stats = torch.cat([h.mean(dim=-1), h.std(dim=-1)], dim=1)
        return F.normalize(self.proj(stats), dim=-1)

    def forward(self, wav):
        return self.classifier(self.encode(wav))


def synthetic_batch(hp, batch_size, device):
    labels = torch.randint(0, hp.n_speakers, (batch_size,))
    t = torch.arange(hp.sample_rate) / hp.sample_rate
    pitch = 100.0 + 20.0 * labels.float()
    wav = torch.sin(2 * math.pi * pitch[:, None] * t[None]) + 0.1 * torch.randn(batch_size, hp.sample_rate)
    return wav.unsqueeze(1).to(device), labels.to(device)


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    hp = AudioHParams()
    model = SpeakerEncoder(hp).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    running = torch.zeros((), device=device)
    for step in range(4):
        inputs, labels = synthetic_batch(hp, 6, device)
        logits = model(inputs)
        loss = F.cross_entropy(logits, labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        running += loss.detach()
    print("mean train loss", (running / 4).item())


if __name__ == "__main__":
    main()
