# twin of: bugs/dj_dev07_global_stats_attrs.py
# area: device placement
# correct: mean and invstddev are registered buffers, so pipeline.to(device) moves them along with the featurizer
import json
import math
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F


def mel_filterbank(n_freqs, n_mels, sample_rate):
    def hz_to_mel(f):
        return 2595.0 * math.log10(1.0 + f / 700.0)
    mel_points = torch.linspace(hz_to_mel(0.0), hz_to_mel(sample_rate / 2), n_mels + 2)
    hz_points = 700.0 * (10 ** (mel_points / 2595.0) - 1.0)
    freqs = torch.linspace(0, sample_rate / 2, n_freqs)
    lower, center, upper = hz_points[:-2, None], hz_points[1:-1, None], hz_points[2:, None]
    up = (freqs - lower) / (center - lower)
    down = (upper - freqs) / (upper - center)
    return torch.clamp(torch.minimum(up, down), min=0.0).t()


class LogMel(nn.Module):
    def __init__(self, sample_rate=16000, n_fft=400, hop=160, n_mels=40):
        super().__init__()
        self.n_fft, self.hop = n_fft, hop
        self.register_buffer("window", torch.hann_window(n_fft))
        self.register_buffer("fbank", mel_filterbank(n_fft // 2 + 1, n_mels, sample_rate))

    def forward(self, wav):
        spec = torch.stft(wav, self.n_fft, self.hop, window=self.window, return_complex=True)
        power = spec.abs().pow(2).transpose(1, 2)
        return torch.log(power @ self.fbank + 1e-6)


class GlobalStatsNormalization(nn.Module):
    def __init__(self, stats_path):
        super().__init__()
        with open(stats_path) as f:
            blob = json.load(f)
        self.register_buffer("mean", torch.tensor(blob["mean"]))
        self.register_buffer("invstddev", torch.tensor(blob["invstddev"]))

    def forward(self, feats):
        return (feats - self.mean) * self.invstddev


class FrameClassifier(nn.Module):
    def __init__(self, n_mels=40, n_classes=5):
        super().__init__()
        self.conv = nn.Conv1d(n_mels, 64, kernel_size=5, padding=2)
        self.lstm = nn.LSTM(64, 64, batch_first=True)
        self.out = nn.Linear(64, n_classes)

    def forward(self, feats):
        x = F.relu(self.conv(feats.transpose(1, 2))).transpose(1, 2)
        return self.out(self.lstm(x)[0])


def synth_batch(batch, seconds, sr, n_classes, device):
    t = torch.arange(int(seconds * sr), device=device) / sr
    cls = torch.randint(0, n_classes, (batch,), device=device)
    freq = 200.0 + 300.0 * cls.float()
    wav = torch.sin(2 * math.pi * freq[:, None] * t) + 0.1 * torch.randn(batch, t.numel(), device=device)
    return wav, cls


def write_stats(path, feats):
    flat = feats.reshape(-1, feats.size(-1))
    stats = {"mean": flat.mean(0).tolist(), "invstddev": (1.0 / flat.std(0).clamp(min=1e-5)).tolist()}
    with open(path, "w") as f:
        json.dump(stats, f)


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    featurizer = LogMel()
    with tempfile.TemporaryDirectory() as tmp:
        stats_path = os.path.join(tmp, "global_stats.json")
        wav, _ = synth_batch(16, 0.5, 16000, 5, "cpu")
        write_stats(stats_path, featurizer(wav))
        pipeline = nn.Sequential(featurizer, GlobalStatsNormalization(stats_path)).to(device)
    model = FrameClassifier().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    total = torch.zeros((), device=device)
    for step in range(8):
        wav, cls = synth_batch(8, 0.5, 16000, 5, device)
        with torch.no_grad():
            feats = pipeline(wav)
        logits = model(feats)
        loss = F.cross_entropy(logits.reshape(-1, 5), cls.repeat_interleave(logits.size(1)))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.detach()
    print(f"mean loss {(total / 8).item():.3f}")


if __name__ == "__main__":
    main()
