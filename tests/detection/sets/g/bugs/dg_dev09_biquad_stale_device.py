# source: https://github.com/gdalsanto/flamo/pull/30
# area: device placement
# bug: the filter bank remembers the device it was built on and keeps creating its frequency grid there after .to(cuda), mixing CPU and CUDA tensors
import math

import torch
import torch.nn as nn


class ParametricEQ(nn.Module):
    """Cascade of peaking biquads whose gains, centre frequencies and Qs are learned."""

    def __init__(self, n_sections=4, nfft=512, fs=16000, device="cpu"):
        super().__init__()
        self.nfft, self.fs = nfft, fs
        self.device = device  # expect[w]: any
        self.log_fc = nn.Parameter(torch.linspace(math.log(200.0), math.log(5000.0), n_sections))
        self.gain_db = nn.Parameter(torch.zeros(n_sections))
        self.log_q = nn.Parameter(torch.zeros(n_sections))

    def coefficients(self):
        w0 = 2 * math.pi * torch.exp(self.log_fc) / self.fs
        amp = 10 ** (self.gain_db / 40)
        alpha = torch.sin(w0) / (2 * torch.exp(self.log_q))
        cos_w0 = torch.cos(w0)
        b = torch.stack([1 + alpha * amp, -2 * cos_w0, 1 - alpha * amp], dim=-1)
        a = torch.stack([1 + alpha / amp, -2 * cos_w0, 1 - alpha / amp], dim=-1)
        return b / a[:, :1], a / a[:, :1]

    def frequency_response(self):
        omega = torch.linspace(0, math.pi, self.nfft // 2 + 1, device=self.device)  # expect[w]: any
        z_inv = torch.exp(-1j * omega).unsqueeze(0)
        b, a = self.coefficients()
        num = b[:, :1] + b[:, 1:2] * z_inv + b[:, 2:] * z_inv ** 2
        den = a[:, :1] + a[:, 1:2] * z_inv + a[:, 2:] * z_inv ** 2
        return (num / den).prod(dim=0)

    def forward(self, spectrum):
        return spectrum * self.frequency_response()


def target_curve(nfft, fs, device):
    freqs = torch.linspace(0, fs / 2, nfft // 2 + 1, device=device)
    bump = 6.0 * torch.exp(-((torch.log(freqs + 1) - math.log(1000.0)) ** 2) / 0.3)
    dip = -4.0 * torch.exp(-((torch.log(freqs + 1) - math.log(4000.0)) ** 2) / 0.2)
    return bump + dip


def magnitude_db(h):
    return 20 * torch.log10(h.abs() + 1e-8)


def fit_eq(eq, target_db, steps=120, lr=0.05):
    opt = torch.optim.Adam(eq.parameters(), lr=lr)
    for step in range(1, steps + 1):
        loss = (magnitude_db(eq.frequency_response()) - target_db).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 60 == 0:
            print(f"step {step}: magnitude mse {loss.item():.3f} dB^2")
    return eq


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    nfft, fs = 512, 16000
    eq = ParametricEQ(n_sections=4, nfft=nfft, fs=fs).to(device)
    fit_eq(eq, target_curve(nfft, fs, device))
    noise = torch.randn(8, fs // 4, device=device)
    spec = torch.fft.rfft(noise, n=nfft)
    shaped = torch.fft.irfft(eq(spec), n=nfft)
    print(f"shaped batch {tuple(shaped.shape)}, rms {shaped.pow(2).mean().sqrt().item():.3f}")


if __name__ == "__main__":
    main()
