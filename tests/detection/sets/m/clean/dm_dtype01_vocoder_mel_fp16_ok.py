# twin of: bugs/dm_dtype01_vocoder_mel_fp16.py
# area: dtype
# correct: the mel helper upcasts the waveform to float32 before building the window and calling torch.stft, so no half-precision cuFFT plan is requested
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class HParams:
    sampling_rate: int = 32000
    filter_length: int = 1280
    hop_length: int = 320
    win_length: int = 1280
    n_mel_channels: int = 80
    frames: int = 20
    batch_size: int = 4
    learning_rate: float = 2e-4
    c_mel: float = 45.0
    fp16_run: bool = True
    steps: int = 3


_windows = {}
_mel_bases = {}


def mel_basis(hps, device, dtype):
    key = (str(device), dtype)
    if key not in _mel_bases:
        n_freq = hps.filter_length // 2 + 1
        centers = torch.linspace(0, n_freq - 1, hps.n_mel_channels + 2)
        bins = torch.arange(n_freq).float()
        fb = torch.zeros(hps.n_mel_channels, n_freq)
        for m in range(hps.n_mel_channels):
            lo, mid, hi = centers[m], centers[m + 1], centers[m + 2]
            up = (bins - lo) / (mid - lo)
            down = (hi - bins) / (hi - mid)
            fb[m] = torch.clamp(torch.minimum(up, down), min=0.0)
        _mel_bases[key] = fb.to(device=device, dtype=dtype)
    return _mel_bases[key]


def mel_spectrogram(y, hps):
    y = y.float()
    key = (str(y.device), y.dtype)
    if key not in _windows:
        _windows[key] = torch.hann_window(hps.win_length, device=y.device, dtype=y.dtype)
    pad = (hps.filter_length - hps.hop_length) // 2
    y = F.pad(y.unsqueeze(1), (pad, pad), mode="reflect").squeeze(1)
    spec = torch.stft(y, hps.filter_length, hop_length=hps.hop_length, win_length=hps.win_length,
                      window=_windows[key], center=False, return_complex=True)
    mag = torch.sqrt(spec.real.pow(2) + spec.imag.pow(2) + 1e-6)
    mel = torch.matmul(mel_basis(hps, y.device, mag.dtype), mag)
    return torch.log(torch.clamp(mel, min=1e-5))


class Generator(nn.Module):
    def __init__(self, n_mels=80, ch=64):
        super().__init__()
        self.pre = nn.Conv1d(n_mels, ch, 7, padding=3)
        self.up1 = nn.ConvTranspose1d(ch, ch // 2, 16, stride=16)
        self.up2 = nn.ConvTranspose1d(ch // 2, ch // 4, 20, stride=20)
        self.post = nn.Conv1d(ch // 4, 1, 7, padding=3)

    def forward(self, c):
        x = F.leaky_relu(self.pre(c), 0.1)
        x = F.leaky_relu(self.up1(x), 0.1)
        x = F.leaky_relu(self.up2(x), 0.1)
        return torch.tanh(self.post(x))


def make_batch(hps, device):
    n = hps.frames * hps.hop_length
    t = torch.arange(n, device=device) / hps.sampling_rate
    f0 = torch.rand(hps.batch_size, 1, device=device) * 300 + 100
    return 0.5 * torch.sin(2 * math.pi * f0 * t)


def train(hps, device):
    net_g = Generator(hps.n_mel_channels).to(device)
    optim_g = torch.optim.AdamW(net_g.parameters(), hps.learning_rate, betas=(0.8, 0.99))
    use_amp = hps.fp16_run and device.type == "cuda"
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    for step in range(hps.steps):
        y = make_batch(hps, device)
        with torch.no_grad():
            c = mel_spectrogram(y, hps)
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
            y_hat = net_g(c).squeeze(1)
            y_hat_mel = mel_spectrogram(y_hat, hps)
            loss_mel = F.l1_loss(c, y_hat_mel) * hps.c_mel
        optim_g.zero_grad(set_to_none=True)
        scaler.scale(loss_mel).backward()
        scaler.step(optim_g)
        scaler.update()
    return loss_mel.detach()


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    final = train(HParams(), device)
    print("final mel loss", float(final))
