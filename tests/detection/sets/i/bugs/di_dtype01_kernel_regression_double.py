# source: https://github.com/cornellius-gp/gpytorch/issues/382
# area: dtype
# bug: numpy float64 features are kept as DoubleTensors and the model is cast to double to match, so on a GPU every matmul runs at FP64 throughput (an order of magnitude slower) with twice the memory
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import Dataset, DataLoader


class Config:
    n_samples = 1024
    n_features = 16
    n_fourier = 256
    lengthscale = 1.5
    batch_size = 256
    epochs = 3
    lr = 1e-2


def make_data(cfg, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(cfg.n_samples, cfg.n_features))
    w = rng.normal(size=(cfg.n_features,))
    y = np.sin(x @ w) + 0.1 * rng.normal(size=cfg.n_samples)
    return x, y


class TabularDataset(Dataset):
    def __init__(self, x, y):
        self.x = torch.from_numpy(x)  # expect[w]: any
        self.y = torch.from_numpy(y)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, idx):
        return self.x[idx], self.y[idx]


class RandomFeatureRegressor(nn.Module):
    """Approximate RBF-kernel regression with random Fourier features."""

    def __init__(self, in_dim, n_fourier, lengthscale):
        super().__init__()
        self.register_buffer("omega", torch.randn(in_dim, n_fourier) / lengthscale)
        self.register_buffer("phase", torch.rand(n_fourier) * 2 * np.pi)
        self.head = nn.Linear(n_fourier, 1)
        self.log_noise = nn.Parameter(torch.zeros(()))

    def forward(self, x):
        feats = torch.cos(x @ self.omega + self.phase) * (2.0 / self.omega.shape[1]) ** 0.5
        return self.head(feats).squeeze(-1)


def build_model(cfg, device):
    model = RandomFeatureRegressor(cfg.n_features, cfg.n_fourier, cfg.lengthscale)
    return model.double().to(device)  # expect[w]: any


def gaussian_nll(pred, target, log_noise):
    var = torch.exp(2 * log_noise)
    return 0.5 * (((pred - target) ** 2) / var + torch.log(var)).mean()


def train(cfg):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    x, y = make_data(cfg)
    loader = DataLoader(TabularDataset(x, y), batch_size=cfg.batch_size, shuffle=True)
    model = build_model(cfg, device)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    for epoch in range(cfg.epochs):
        total = torch.zeros((), device=device, dtype=torch.float64)
        for xb, yb in loader:
            xb, yb = xb.to(device), yb.to(device)
            loss = gaussian_nll(model(xb), yb, model.log_noise)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.detach()
        print(f"epoch {epoch}: nll {(total / len(loader)).item():.4f}")
    return model


if __name__ == "__main__":
    train(Config())
