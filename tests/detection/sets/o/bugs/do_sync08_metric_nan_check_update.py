# source: https://github.com/Lightning-AI/torchmetrics/pull/2943
# area: transfer & sync
# bug: the mean metric's update() branches in Python on a CUDA NaN check and turns the default float weight into a device tensor on every call, two host syncs per batch in the eval loop
import warnings
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class MeanMetric(nn.Module):
    def __init__(self, nan_strategy="warn"):
        super().__init__()
        self.nan_strategy = nan_strategy
        self.register_buffer("value_sum", torch.zeros(()))
        self.register_buffer("weight_sum", torch.zeros(()))

    @property
    def device(self):
        return self.value_sum.device

    def _cast_and_check(self, value, weight):
        value = torch.as_tensor(value, dtype=torch.float32, device=self.device)
        weight = torch.as_tensor(weight, dtype=torch.float32, device=self.device)  # expect[w]: any
        weight = torch.broadcast_to(weight, value.shape)
        nans = torch.isnan(value) | torch.isnan(weight)
        if nans.any():  # expect[n]: any
            if self.nan_strategy == "error":
                raise RuntimeError("encountered NaN in metric input")
            if self.nan_strategy == "warn":
                warnings.warn("NaN values found in metric input, dropping them")
            keep = ~nans
            value, weight = value[keep], weight[keep]
        return value, weight

    def update(self, value, weight=1.0):
        value, weight = self._cast_and_check(value, weight)
        self.value_sum += (value * weight).sum()
        self.weight_sum += weight.sum()

    def compute(self):
        return self.value_sum / self.weight_sum.clamp_min(1e-12)

    def reset(self):
        self.value_sum.zero_()
        self.weight_sum.zero_()


class AgeRegressor(nn.Module):
    def __init__(self, in_dim=40):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(in_dim, 128), nn.GELU(), nn.Linear(128, 64), nn.GELU(), nn.Linear(64, 1))

    def forward(self, x):
        return self.net(x).squeeze(-1)


class Evaluator:
    def __init__(self, model, device):
        self.model = model
        self.device = device
        self.metrics = nn.ModuleDict({"mse": MeanMetric(), "mae": MeanMetric()}).to(device)

    @torch.no_grad()
    def run(self, loader):
        self.model.eval()
        for m in self.metrics.values():
            m.reset()
        for feats, age in loader:
            feats = feats.to(self.device, non_blocking=True)
            age = age.to(self.device, non_blocking=True)
            err = self.model(feats) - age
            self.metrics["mse"].update(err.pow(2))
            self.metrics["mae"].update(err.abs())
        return {k: m.compute().item() for k, m in self.metrics.items()}


def make_loader(n=1024, in_dim=40, use_cuda=False):
    g = torch.Generator().manual_seed(3)
    x = torch.randn(n, in_dim, generator=g)
    y = 40 + 10 * x[:, :4].sum(1) / 2 + torch.randn(n, generator=g)
    return DataLoader(TensorDataset(x, y), batch_size=64, pin_memory=use_cuda)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    model = AgeRegressor().to(device)
    results = Evaluator(model, device).run(make_loader(use_cuda=device.type == "cuda"))
    print({k: round(v, 3) for k, v in results.items()})


if __name__ == "__main__":
    main()
