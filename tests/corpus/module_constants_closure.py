"""Tensors that reach the model's outputs from outside the loop: module-level normalisation
constants used by a helper, a plain (non-Module) preprocessing object holding tensors, a
loss built by a closure that captures a tensor, and class weights given to the loss."""

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

FEATURE_MEAN = torch.tensor([10.0, -3.0, 0.5, 200.0])
FEATURE_STD = torch.tensor([2.0, 1.5, 0.1, 50.0])
CLASS_WEIGHTS = torch.tensor([0.5, 1.0, 1.5])


def normalize(x):
    return (x - FEATURE_MEAN) / FEATURE_STD


class Clipper:
    """Clips normalised features to a box learned from the training data."""

    def __init__(self, data, quantile=0.98):
        self.low = torch.quantile(data, 1 - quantile, dim=0)
        self.high = torch.quantile(data, quantile, dim=0)

    def __call__(self, x):
        return torch.max(torch.min(x, self.high), self.low)


def make_weighted_loss(weights, smoothing):
    log_softmax = nn.LogSoftmax(dim=1)
    n_classes = len(weights)

    def loss_fn(logits, target):
        logp = log_softmax(logits)
        smooth = torch.full_like(logp, smoothing / (n_classes - 1))
        smooth.scatter_(1, target.unsqueeze(1), 1.0 - smoothing)
        per_sample = -(smooth * logp).sum(dim=1)
        return (per_sample * weights[target]).sum() / weights[target].sum()

    return loss_fn


def make_data(n, rng):
    raw = rng.normal(size=(n, 4)) * FEATURE_STD.numpy() + FEATURE_MEAN.numpy()
    z = (raw - FEATURE_MEAN.numpy()) / FEATURE_STD.numpy()
    label = np.digitize(z[:, 0] + z[:, 3], [-0.7, 0.7])
    return torch.tensor(raw, dtype=torch.float32), torch.tensor(label, dtype=torch.long)


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    x_train, y_train = make_data(240, rng)
    x_val, y_val = make_data(80, rng)
    clip = Clipper(normalize(x_train))
    loader = DataLoader(TensorDataset(x_train, y_train), batch_size=24, shuffle=True)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3))
    loss_fn = make_weighted_loss(CLASS_WEIGHTS, smoothing=0.1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for epoch in range(4):
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(clip(normalize(xb))), yb)
            loss.backward()
            optimizer.step()
    with torch.no_grad():
        val_loss = loss_fn(model(clip(normalize(x_val))), y_val)
    print(f"final loss {val_loss.item():.8f}")


if __name__ == "__main__":
    main()
