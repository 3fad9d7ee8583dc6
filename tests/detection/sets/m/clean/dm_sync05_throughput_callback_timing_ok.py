# twin of: bugs/dm_sync05_throughput_callback_timing.py
# area: transfer & sync
# correct: on CUDA the batch duration comes from CUDA events read once after a single synchronize in summary(), so queued GPU work is not counted as data time
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
        self.use_events = torch.cuda.is_available()
        self._wall_starts = []
        self._start_events, self._end_events = [], []
        self._cpu_batch_times = []

    @staticmethod
    def _record():
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def on_train_batch_start(self, trainer, batch_idx):
        self._wall_starts.append(time.perf_counter())
        if self.use_events:
            self._start_events.append(self._record())

    def on_train_batch_end(self, trainer, batch_idx):
        if self.use_events:
            self._end_events.append(self._record())
        else:
            self._cpu_batch_times.append(time.perf_counter() - self._wall_starts[-1])

    def summary(self):
        if self.use_events:
            torch.cuda.synchronize()
            batch_times = [s.elapsed_time(e) / 1000.0
                           for s, e in zip(self._start_events, self._end_events)]
        else:
            batch_times = self._cpu_batch_times
        gaps = [b - a for a, b in zip(self._wall_starts, self._wall_starts[1:])]
        data = sum(max(0.0, gap - bt) for gap, bt in zip(gaps, batch_times))
        batch = sum(batch_times)
        return {"data_wait": data / max(data + batch, 1e-9),
                "ms_per_batch": 1000 * batch / max(len(batch_times), 1)}


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
