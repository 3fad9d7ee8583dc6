# source: https://github.com/datamol-io/graphium/issues/406
# area: AMP
# bug: validation predictions come out of CUDA autocast as float16 and the Pearson metric sums over the whole split in float16, so the sums overflow to inf and the reported correlation collapses to 0 or NaN
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class FingerprintRegressor(nn.Module):
    """MLP over pooled molecular fingerprints predicting one property (e.g. HOMO-LUMO gap)."""

    def __init__(self, in_dim=128, hidden=256):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(in_dim, hidden), nn.SiLU(), nn.LayerNorm(hidden),
            nn.Linear(hidden, hidden), nn.SiLU(),
            nn.Linear(hidden, 1),
        )

    def forward(self, x):
        return self.net(x).squeeze(-1)


class PearsonR:
    def __init__(self):
        self.reset()

    def reset(self):
        self.preds, self.target = [], []

    def update(self, preds, target):
        self.preds.append(preds.detach().flatten())
        self.target.append(target.detach().flatten().to(preds.dtype))  # expect[m]: any

    def compute(self):
        p = torch.cat(self.preds)  # expect[m]: any
        t = torch.cat(self.target)
        pc, tc = p - p.mean(), t - t.mean()
        cov = (pc * tc).sum()
        return cov / torch.sqrt((pc * pc).sum() * (tc * tc).sum())


class MeanAbsoluteError:
    def __init__(self):
        self.abs_sum, self.count = 0.0, 0

    def update(self, preds, target):
        self.abs_sum = self.abs_sum + (preds.float() - target.float()).abs().sum()
        self.count += target.numel()

    def compute(self):
        return self.abs_sum / max(self.count, 1)


@torch.no_grad()
def validate(model, loader, use_amp=True):
    use_amp = use_amp and device.type == "cuda"
    model.eval()
    metrics = {"pearsonr": PearsonR(), "mae": MeanAbsoluteError()}
    for feats, y in loader:
        feats = feats.to(device, non_blocking=True)
        y = y.to(device, non_blocking=True)
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
            preds = model(feats)
        for m in metrics.values():
            m.update(preds, y)
    return {name: float(m.compute()) for name, m in metrics.items()}


def make_split(n=40000, in_dim=128):
    feats = torch.randn(n, in_dim)
    w = torch.randn(in_dim) / in_dim ** 0.5
    y = 4.0 * (feats @ w) + 6.0 + 0.3 * torch.randn(n)
    return TensorDataset(feats, y)


if __name__ == "__main__":
    torch.manual_seed(0)
    model = FingerprintRegressor().to(device)
    loader = DataLoader(make_split(), batch_size=2048, pin_memory=device.type == "cuda")
    print(validate(model, loader))
