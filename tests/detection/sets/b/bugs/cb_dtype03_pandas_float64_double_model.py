# source: https://openillumi.com/en/en-pytorch-double-expected-float-fix
# area: dtype
# bug: features come out of the NumPy/pandas pipeline as float64 and the Double/Float mismatch is "fixed" with model.double(), so the whole GPU training runs in float64 (a fraction of fp32 throughput, twice the memory)
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
rng = np.random.default_rng(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def load_table(n_rows=400, n_features=10):
    # stands in for pd.read_csv(...).to_numpy(): pandas hands back float64
    X = rng.normal(size=(n_rows, n_features))
    w = rng.normal(size=(n_features,))
    y = X @ w + 0.1 * rng.normal(size=n_rows)
    return X, y


class TabularDataset(Dataset):
    def __init__(self, X, y):
        self.mean = X.mean(axis=0)
        self.std = X.std(axis=0) + 1e-6
        self.X = (X - self.mean) / self.std
        self.y = y

    def __len__(self):
        return len(self.X)

    def __getitem__(self, idx):
        x = torch.from_numpy(self.X[idx])  # expect[f64]: any
        y = torch.tensor(self.y[idx])
        return x, y


class Regressor(nn.Module):
    def __init__(self, n_features):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_features, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, x):
        return self.net(x).squeeze(-1)


def run_epoch(model, loader, criterion, optimizer=None):
    training = optimizer is not None
    model.train(training)
    total, count = 0.0, 0
    with torch.set_grad_enabled(training):
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            loss = criterion(model(x), y)
            if training:
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            total += loss.item() * len(x)
            count += len(x)
    return total / count


if __name__ == "__main__":
    X, y = load_table()
    train_ds, val_ds = TabularDataset(X[:320], y[:320]), TabularDataset(X[320:], y[320:])
    train_loader = DataLoader(train_ds, batch_size=32, shuffle=True)
    val_loader = DataLoader(val_ds, batch_size=64)
    # the model would not accept the Double batches, so match it to the data
    model = Regressor(X.shape[1]).double().to(device)  # expect[f64]: any
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    criterion = nn.MSELoss()
    for epoch in range(3):
        tr = run_epoch(model, train_loader, criterion, optimizer)
        va = run_epoch(model, val_loader, criterion)
        print(f"epoch {epoch}: train mse {tr:.4f} val mse {va:.4f}")
