# source: https://github.com/lightly-ai/lightly-train/pull/749
# area: transfer & sync
# bug: the throughput callback stamps batch end with perf_counter while backward/optimizer kernels are still queued on the GPU, so GPU time is reported as data-loading time
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Callback:
    def on_train_batch_start(self, trainer, batch_idx):
        pass

    def on_train_batch_end(self, trainer, batch_idx):
        pass


class ThroughputMonitor(Callback):
    def __init__(self):
        self.data_times, self.batch_times = [], []
        self._start = None
        self._last_end = None

    def on_train_batch_start(self, trainer, batch_idx):
        now = time.perf_counter()
        if self._last_end is not None:
            self.data_times.append(now - self._last_end)
        self._start = now

    def on_train_batch_end(self, trainer, batch_idx):
        end = time.perf_counter()  # expect: any
        self.batch_times.append(end - self._start)
        self._last_end = end

    def summary(self):
        data = sum(self.data_times)
        batch = sum(self.batch_times)
        return {"data_wait": data / max(data + batch, 1e-9),
                "ms_per_batch": 1000 * batch / max(len(self.batch_times), 1)}


class Trainer:
    def __init__(self, model, optimizer, callbacks=()):
        self.model, self.optimizer = model, optimizer
        self.callbacks = list(callbacks)

    def _call(self, hook, batch_idx):
        for cb in self.callbacks:
            getattr(cb, hook)(self, batch_idx)

    def fit(self, loader, epochs=1):
        self.model.train()
        for _ in range(epochs):
            for batch_idx, (x, y) in enumerate(loader):
                self._call("on_train_batch_start", batch_idx)
                x = x.to(device, non_blocking=True)
                y = y.to(device, non_blocking=True)
                loss = F.cross_entropy(self.model(x), y)
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                self.optimizer.step()
                self._call("on_train_batch_end", batch_idx)


def make_loader(n=1024, batch_size=128):
    x = torch.randn(n, 3, 32, 32)
    y = torch.randint(0, 10, (n,))
    return DataLoader(TensorDataset(x, y), batch_size=batch_size, shuffle=True,
                      num_workers=2, pin_memory=torch.cuda.is_available(),
                      persistent_workers=True)


if __name__ == "__main__":
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        nn.Flatten(), nn.Linear(64, 10)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    monitor = ThroughputMonitor()
    Trainer(model, opt, [monitor]).fit(make_loader(), epochs=1)
    print({k: round(v, 3) for k, v in monitor.summary().items()})
