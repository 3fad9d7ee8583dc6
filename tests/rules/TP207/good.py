import time

import torch


def train(model, loader, optimizer):
    for x, y in loader:
        loss = model(x).sum()
        loss.backward()
        optimizer.step()
    torch.cuda.synchronize()
    return time.perf_counter()


def timed(model, loader, optimizer, every=50):
    for step, (x, y) in enumerate(loader):
        loss = model(x).sum()
        loss.backward()
        optimizer.step()
        if step % every == 0:
            torch.cuda.synchronize()  # timing every N steps


class LatencyMeter:
    def mean(self):
        torch.cuda.synchronize()  # once, after the loop
        return sum(self.samples) / len(self.samples)


def evaluate(model, loader, meter):
    total = 0.0
    for x, y in loader:
        # a tensor's mean, not the meter's: LatencyMeter.mean does not run per step
        total += torch.nn.functional.mse_loss(model(x), y, reduction="none").flatten(1).mean(1)
    return total, meter.mean()
