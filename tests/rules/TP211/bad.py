import time

import torch


def latency(model, device, runs=20):
    model = model.to(device)
    x = torch.randn(1, 3, 224, 224, device=device)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        model(x)
        times.append(time.perf_counter() - start)
    return sum(times) / runs


def throughput(net, batches, device):
    net.to(device)
    begin = time.time()
    for batch in batches:
        net(batch.to(device))
    return len(batches) / (time.time() - begin)


def benchmark_op(fn, iters=10):
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    return (time.perf_counter() - start) / iters


class SpeedLogger:
    """A trainer callback: the timer starts in one hook and stops in the other."""

    def __init__(self):
        self.times = []

    def on_batch_start(self, trainer, batch):
        self._t0 = time.perf_counter()

    def on_batch_end(self, trainer, outputs):
        self.times.append(time.perf_counter() - self._t0)


class ThroughputMonitor:
    """The clock read into a name first, in both hooks."""

    def on_train_batch_start(self, trainer, batch_idx):
        now = time.perf_counter()
        self._start = now

    def on_train_batch_end(self, trainer, batch_idx):
        end = time.perf_counter()
        self.batch_times.append(end - self._start)


class LayerTimer:
    """Per-layer times from forward hooks, kept by module."""

    def attach(self, model):
        for layer in model.children():
            layer.register_forward_pre_hook(self._pre)
            layer.register_forward_hook(self._post)

    def _pre(self, module, inputs):
        self._start[module] = time.perf_counter()

    def _post(self, module, inputs, output):
        self.times[module] = time.perf_counter() - self._start.pop(module)


def throughput(model, inputs, iters):
    start = time.time()
    for _ in range(iters):
        model(inputs)
    end = time.time()
    return iters / (end - start)
