# twin of: bugs/df_dev05_mel_stft_loss_filterbank.py
# area: device placement
# correct: the mel filterbank is registered as a buffer next to the window, so criterion.to(device) moves it with the rest of the loss module
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def hz_to_mel(f):
    return 2595.0 * math.log10(1.0 + f / 700.0)


def mel_filterbank(sample_rate, n_fft, n_mels):
    n_freqs = n_fft // 2 + 1
    freqs = torch.linspace(0, sample_rate / 2, n_freqs)
    mel_pts = torch.linspace(hz_to_mel(0.0), hz_to_mel(sample_rate / 2), n_mels + 2)
    hz_pts = 700.0 * (10 ** (mel_pts / 2595.0) - 1.0)
    fb = torch.zeros(n_mels, n_freqs)
    for m in range(n_mels):
        lo, mid, hi = hz_pts[m], hz_pts[m + 1], hz_pts[m + 2]
        up = (freqs - lo) / (mid - lo)
        down = (hi - freqs) / (hi - mid)
        fb[m] = torch.clamp(torch.minimum(up, down), min=0.0)
    return fb


class MelSTFTLoss(nn.Module):
    def __init__(self, sample_rate=16000, fft_size=512, hop_size=128, n_mels=40):
        super().__init__()
        self.fft_size = fft_size
        self.hop_size = hop_size
        self.register_buffer("fb", mel_filterbank(sample_rate, fft_size, n_mels).unsqueeze(0))
        self.register_buffer("window", torch.hann_window(fft_size))

    def _mel_mag(self, x):
        spec = torch.stft(x, self.fft_size, self.hop_size, window=self.window, return_complex=True)
        mag = spec.abs().clamp_min(1e-7)
        return torch.matmul(self.fb, mag)

    def forward(self, pred, target):
        p, t = self._mel_mag(pred), self._mel_mag(target)
        sc = torch.linalg.norm(t - p, dim=(-2, -1)) / torch.linalg.norm(t, dim=(-2, -1))
        log_mag = F.l1_loss(torch.log(p), torch.log(t))
        return sc.mean() + log_mag


class TinyUpsampler(nn.Module):
    def __init__(self, channels=32):
        super().__init__()
        self.net = nn.Sequential(
            nn.ConvTranspose1d(1, channels, kernel_size=8, stride=4, padding=2),
            nn.LeakyReLU(0.2),
            nn.Conv1d(channels, channels, kernel_size=7, padding=3),
            nn.LeakyReLU(0.2),
            nn.Conv1d(channels, 1, kernel_size=7, padding=3),
            nn.Tanh(),
        )

    def forward(self, low_rate):
        return self.net(low_rate.unsqueeze(1)).squeeze(1)


def synth_pairs(batch, length, sample_rate=16000):
    t = torch.arange(length) / sample_rate
    f0 = torch.rand(batch, 1) * 400 + 100
    hi = 0.5 * torch.sin(2 * math.pi * f0 * t) + 0.2 * torch.sin(2 * math.pi * 3 * f0 * t)
    return hi[:, ::4].contiguous(), hi


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = TinyUpsampler().to(device)
    criterion = MelSTFTLoss().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=2e-4, betas=(0.8, 0.99))
    for epoch in range(2):
        running = torch.zeros((), device=device)
        for _ in range(5):
            low, high = synth_pairs(4, 4096)
            low, high = low.to(device), high.to(device)
            loss = criterion(model(low), high)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            running += loss.detach()
        print(f"epoch {epoch}: mel-stft loss {(running / 5).item():.4f}")


if __name__ == "__main__":
    torch.manual_seed(0)
    main()
