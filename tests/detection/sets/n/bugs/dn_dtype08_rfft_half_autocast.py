# source: https://github.com/thuml/Time-Series-Library/issues/761
# area: dtype
# bug: under fp16 autocast on CUDA the projected series is Half and torch.fft.rfft over a length-96 window is rejected by cuFFT (half precision only supports power-of-two sizes)
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


@dataclass
class ForecastConfig:
    seq_len: int = 96
    pred_len: int = 24
    n_vars: int = 7
    d_model: int = 32
    top_k: int = 5
    use_amp: bool = torch.cuda.is_available()


class FourierFilterBlock(nn.Module):
    """Keeps the top-k dominant frequencies of each channel and drops the rest."""

    def __init__(self, d_model, top_k):
        super().__init__()
        self.top_k = top_k
        self.mix = nn.Linear(d_model, d_model)

    def forward(self, x):
        length = x.size(1)
        spec = torch.fft.rfft(x, dim=1)  # expect: any
        amp = spec.abs()
        amp[:, 0] = 0
        kth = amp.topk(self.top_k, dim=1).values[:, -1:, :]
        filtered = torch.where(amp >= kth, spec, torch.zeros_like(spec))
        seasonal = torch.fft.irfft(filtered, n=length, dim=1)
        return x + self.mix(seasonal)


class SpectralForecaster(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed = nn.Linear(cfg.n_vars, cfg.d_model)
        self.blocks = nn.ModuleList(FourierFilterBlock(cfg.d_model, cfg.top_k) for _ in range(2))
        self.norm = nn.LayerNorm(cfg.d_model)
        self.time_proj = nn.Linear(cfg.seq_len, cfg.pred_len)
        self.out = nn.Linear(cfg.d_model, cfg.n_vars)

    def forward(self, x):
        mean = x.mean(1, keepdim=True)
        std = x.std(1, keepdim=True) + 1e-5
        h = self.embed((x - mean) / std)
        for block in self.blocks:
            h = block(h)
        h = self.time_proj(self.norm(h).transpose(1, 2)).transpose(1, 2)
        return self.out(h) * std + mean


def make_windows(cfg, n=48, seed=0):
    g = torch.Generator().manual_seed(seed)
    t = torch.arange(n + cfg.seq_len + cfg.pred_len, dtype=torch.float32)
    base = torch.sin(2 * torch.pi * t / 24)[:, None] + 0.1 * torch.randn(t.numel(), cfg.n_vars, generator=g)
    xs = torch.stack([base[i:i + cfg.seq_len] for i in range(n)])
    ys = torch.stack([base[i + cfg.seq_len:i + cfg.seq_len + cfg.pred_len] for i in range(n)])
    return xs, ys


def train(cfg, epochs=2, batch_size=16):
    model = SpectralForecaster(cfg).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cuda", enabled=cfg.use_amp)
    xs, ys = make_windows(cfg)
    xs, ys = xs.to(device), ys.to(device)
    for epoch in range(epochs):
        total = torch.zeros((), device=device)
        for start in range(0, xs.size(0), batch_size):
            xb, yb = xs[start:start + batch_size], ys[start:start + batch_size]
            with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=cfg.use_amp):
                pred = model(xb)
                loss = F.mse_loss(pred.float(), yb)
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            total += loss.detach()
        print(f"epoch {epoch}: mse {(total / (xs.size(0) // batch_size)).item():.4f}")


if __name__ == "__main__":
    torch.manual_seed(0)
    train(ForecastConfig())
