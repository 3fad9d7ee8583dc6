# source: https://github.com/neuro-ml/thunder/issues/49
# area: device placement
# bug: the metric callback stacks GPU prediction/target tensors with np.asarray, which cannot read CUDA memory
from collections import defaultdict

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def accuracy(pred, target):
    return float((pred.argmax(-1) == target).mean())


def brier(pred, target):
    onehot = np.eye(pred.shape[-1])[target]
    return float(((pred - onehot) ** 2).sum(-1).mean())


class MetricLogger:
    def __init__(self, metrics):
        self.metrics = metrics
        self._buffer = []
        self.history = defaultdict(list)

    def on_validation_batch_end(self, probs, targets):
        for p, t in zip(probs.detach(), targets):
            self._buffer.append((p, t))

    def on_validation_epoch_end(self, epoch):
        predictions, targets = map(np.asarray, zip(*self._buffer))  # expect: any
        self._buffer.clear()
        for name, fn in self.metrics.items():
            self.history[name].append(fn(predictions, targets))
        print(epoch, {k: round(v[-1], 4) for k, v in self.history.items()})


class Trainer:
    def __init__(self, model, callbacks, lr=1e-2):
        self.model = model.to(device)
        self.callbacks = callbacks
        self.opt = torch.optim.Adam(self.model.parameters(), lr=lr)

    def fit(self, train, valid, epochs=3, bs=32):
        for epoch in range(epochs):
            self.model.train()
            x, y = train
            for i in range(0, len(x), bs):
                loss = F.cross_entropy(self.model(x[i:i + bs]), y[i:i + bs])
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
            self.model.eval()
            with torch.no_grad():
                vx, vy = valid
                for i in range(0, len(vx), bs):
                    probs = self.model(vx[i:i + bs]).softmax(-1)
                    for cb in self.callbacks:
                        cb.on_validation_batch_end(probs, vy[i:i + bs])
            for cb in self.callbacks:
                cb.on_validation_epoch_end(epoch)


def main():
    torch.manual_seed(0)
    w = torch.randn(10, 3)
    x = torch.randn(320, 10)
    y = (x @ w).argmax(-1)
    train = (x[:256].to(device), y[:256].to(device))
    valid = (x[256:].to(device), y[256:].to(device))
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3))
    logger = MetricLogger({"accuracy": accuracy, "brier": brier})
    Trainer(model, [logger]).fit(train, valid)


if __name__ == "__main__":
    main()
