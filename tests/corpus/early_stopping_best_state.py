"""Early stopping on the validation loss: the best weights are kept as a cloned state
dict and a deep copy of the model, then restored; data is standardised with NumPy and
turned into tensors with torch.tensor."""

import copy

import numpy as np
import torch
import torch.nn as nn


def load_housing_like(n, rng):
    rooms = rng.normal(6, 1, n)
    age = rng.uniform(0, 100, n)
    distance = rng.gamma(2.0, 2.0, n)
    price = 5 * rooms - 0.05 * age - 1.5 * np.log1p(distance) + rng.normal(0, 1, n)
    return np.stack([rooms, age, distance], axis=1), price


def standardize(train, *others):
    mean, std = train.mean(axis=0), train.std(axis=0)
    return [(a - mean) / std for a in (train, *others)]


class EarlyStopping:
    def __init__(self, patience=3, min_delta=1e-4):
        self.patience, self.min_delta = patience, min_delta
        self.best_loss = float("inf")
        self.best_state = None
        self.best_model = None
        self.bad_epochs = 0

    def step(self, val_loss, model):
        if val_loss < self.best_loss - self.min_delta:
            self.best_loss = val_loss
            self.best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
            self.best_model = copy.deepcopy(model)
            self.bad_epochs = 0
        else:
            self.bad_epochs += 1
        return self.bad_epochs >= self.patience


def main():
    rng = np.random.default_rng(0)
    torch.manual_seed(0)
    X, y = load_housing_like(300, rng)
    X_train, X_val = X[:220], X[220:]
    y_mean, y_std = y[:220].mean(), y[:220].std()
    X_train, X_val = standardize(X_train, X_val)
    X_train = torch.tensor(X_train, dtype=torch.float32)
    X_val = torch.tensor(X_val, dtype=torch.float32)
    y_train = torch.tensor((y[:220] - y_mean) / y_std, dtype=torch.float32).unsqueeze(1)
    y_val = torch.tensor((y[220:] - y_mean) / y_std, dtype=torch.float32).unsqueeze(1)

    model = nn.Sequential(nn.Linear(3, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    loss_fn = nn.MSELoss()
    stopper = EarlyStopping(patience=3)
    for epoch in range(60):
        model.train()
        perm = torch.randperm(len(X_train))
        for i in range(0, len(perm), 44):
            idx = perm[i : i + 44]
            optimizer.zero_grad()
            loss_fn(model(X_train[idx]), y_train[idx]).backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            val_loss = loss_fn(model(X_val), y_val).item()
        if stopper.step(val_loss, model):
            print(f"stopping at epoch {epoch}, best val {stopper.best_loss:.4f}")
            break
    model.load_state_dict(stopper.best_state)
    with torch.no_grad():
        restored = loss_fn(model(X_val), y_val).item()
        copied = loss_fn(stopper.best_model(X_val), y_val).item()
    assert abs(restored - copied) < 1e-6
    print(f"final loss {restored:.8f}")


if __name__ == "__main__":
    main()
