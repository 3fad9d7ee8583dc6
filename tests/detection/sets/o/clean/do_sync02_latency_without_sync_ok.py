# twin of: bugs/do_sync02_latency_without_sync.py
# area: transfer & sync
# correct: on CUDA the latency is taken from CUDA events recorded on the stream and read after one synchronize at the end
import time
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class LocalBranch(nn.Module):
    def __init__(self, ch=16):
        super().__init__()
        self.stem = nn.Conv2d(3, ch, 3, padding=1)
        self.body = nn.Sequential(nn.Conv2d(ch, ch, 3, padding=1, groups=ch), nn.GELU(), nn.Conv2d(ch, ch, 1))
        self.mul = nn.Conv2d(ch, 3, 3, padding=1)
        self.add = nn.Conv2d(ch, 3, 3, padding=1)

    def forward(self, x):
        h = self.body(F.gelu(self.stem(x)))
        return torch.relu(self.mul(h)) + 0.5, torch.tanh(self.add(h))


class GlobalBranch(nn.Module):
    def __init__(self, ch=16):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(3, ch, 3, stride=2, padding=1), nn.GELU(), nn.AdaptiveAvgPool2d(1))
        self.color = nn.Linear(ch, 9)
        self.gamma = nn.Linear(ch, 1)

    def forward(self, x):
        z = self.enc(x).flatten(1)
        eye = torch.eye(3, device=x.device).flatten()
        return (self.color(z) + eye).view(-1, 3, 3), F.softplus(self.gamma(z)) + 0.5


class TinyIAT(nn.Module):
    def __init__(self):
        super().__init__()
        self.local_net = LocalBranch()
        self.global_net = GlobalBranch()

    def forward(self, img_low):
        mul, add = self.local_net(img_low)
        img_high = (img_low * mul + add).clamp(1e-4, 1.0)
        color, gamma = self.global_net(img_low)
        out = torch.einsum("bchw,bdc->bdhw", img_high, color).clamp(1e-4, 1.0)
        out = out ** gamma.view(-1, 1, 1, 1)
        return mul, add, out


class LatencyMeter:
    def __init__(self, device):
        self.use_events = device.type == "cuda"
        self.samples = []

    def start(self):
        if self.use_events:
            self._start = torch.cuda.Event(enable_timing=True)
            self._start.record()
        else:
            self._t0 = time.perf_counter()

    def stop(self):
        if self.use_events:
            end = torch.cuda.Event(enable_timing=True)
            end.record()
            self.samples.append((self._start, end))
        else:
            self.samples.append(time.perf_counter() - self._t0)

    def mean(self, skip=0):
        kept = self.samples[skip:]
        if self.use_events:
            torch.cuda.synchronize()
            kept = [s.elapsed_time(e) / 1000.0 for s, e in kept]
        return sum(kept) / max(len(kept), 1)


def psnr(pred, target):
    mse = F.mse_loss(pred, target, reduction="none").flatten(1).mean(1)
    return 10.0 * torch.log10(1.0 / mse.clamp_min(1e-10))


def make_test_set(n=24, size=96):
    g = torch.Generator().manual_seed(1)
    high = torch.rand(n, 3, size, size, generator=g)
    low = high * 0.15 + 0.01 * torch.rand(n, 3, size, size, generator=g)
    return DataLoader(TensorDataset(low, high), batch_size=1, pin_memory=torch.cuda.is_available())


@torch.no_grad()
def evaluate_speed(model, loader, device, warmup=3):
    model.eval()
    meter = LatencyMeter(device)
    psnr_sum = torch.zeros((), device=device)
    for low, high in loader:
        low = low.to(device, non_blocking=True)
        high = high.to(device, non_blocking=True)
        meter.start()
        _, _, enhanced = model(low)
        meter.stop()
        psnr_sum += psnr(enhanced, high).sum()
    avg_psnr = (psnr_sum / len(loader.dataset)).item()
    return meter.mean(skip=warmup), avg_psnr


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    model = TinyIAT().to(device)
    loader = make_test_set()
    latency, avg_psnr = evaluate_speed(model, loader, device)
    print(f"avg latency {latency * 1000:.2f} ms  ({1.0 / max(latency, 1e-9):.1f} FPS)  PSNR {avg_psnr:.2f} dB")


if __name__ == "__main__":
    main()
