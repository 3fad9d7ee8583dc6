import time

import torch


def latency(model, device, runs=20):
    model = model.to(device)
    x = torch.randn(1, 3, 224, 224, device=device)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        model(x)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return sum(times) / runs


def epoch_time(model, loader, optimizer, device):
    model.to(device)
    start = time.time()
    total = 0.0
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
        total += loss.item()  # waits for the step: the clock below sees the work done
    return total, time.time() - start


def loading_time(loader, device):
    start = time.perf_counter()
    batches = [x.to(device) for x, _ in loader]  # no model: host work
    return batches, time.perf_counter() - start


class OpTimer:
    def __init__(self, device):
        self.device = device

    def _sync(self):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def time_op(self, fn, iters=10):
        self._sync()
        start = time.perf_counter()
        for _ in range(iters):
            fn()
        self._sync()  # a helper that waits
        return (time.perf_counter() - start) / iters


def time_loader(make_batches):
    start = time.perf_counter()
    make_batches()
    torch.cuda.synchronize()
    return time.perf_counter() - start


class SpeedLogger:
    """A trainer callback: the timer starts in one hook and stops in the other."""

    def __init__(self):
        self.times = []

    def on_batch_start(self, trainer, batch):
        torch.cuda.synchronize()
        self._t0 = time.perf_counter()

    def on_batch_end(self, trainer, outputs):
        torch.cuda.synchronize()
        self.times.append(time.perf_counter() - self._t0)


class ThroughputMonitor:
    """The clock read into a name first, after waiting for the GPU."""

    def on_train_batch_start(self, trainer, batch_idx):
        torch.cuda.synchronize()
        now = time.perf_counter()
        self._start = now

    def on_train_batch_end(self, trainer, batch_idx):
        torch.cuda.synchronize()
        end = time.perf_counter()
        self.batch_times.append(end - self._start)


class LayerTimer:
    """Per-layer times from forward hooks, each read after waiting for the GPU."""

    def attach(self, model):
        for layer in model.children():
            layer.register_forward_pre_hook(self._pre)
            layer.register_forward_hook(self._post)

    def _pre(self, module, inputs):
        torch.cuda.synchronize()
        self._start[module] = time.perf_counter()

    def _post(self, module, inputs, output):
        torch.cuda.synchronize()
        self.times[module] = time.perf_counter() - self._start.pop(module)


class LatencyMeter:
    """CUDA events on the GPU; the host clock only where there is no GPU."""

    def __init__(self, device):
        self.use_events = device.type == "cuda"
        self.samples = []

    def start(self):
        if self.use_events:
            self._begin = torch.cuda.Event(enable_timing=True)
            self._begin.record()
        else:
            self._t0 = time.perf_counter()

    def stop(self):
        if self.use_events:
            done = torch.cuda.Event(enable_timing=True)
            done.record()
            self.samples.append((self._begin, done))
        else:
            self.samples.append(time.perf_counter() - self._t0)


def latency(model, batch, use_events):
    if use_events:
        begin, done = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        model(batch)
        done.record()
        torch.cuda.synchronize()
        return begin.elapsed_time(done) / 1000
    t0 = time.perf_counter()
    model(batch)
    return time.perf_counter() - t0


def throughput(model, inputs, iters):
    start = time.time()
    for _ in range(iters):
        model(inputs)
    torch.cuda.synchronize()
    end = time.time()
    return iters / (end - start)


def time_cpu(fn, inputs, runs):
    s = time.perf_counter()
    for _ in range(runs):
        fn(*inputs)
    e = time.perf_counter()
    return (e - s) / runs
