"""A denoising autoencoder: inputs are corrupted in the loop with Gaussian noise and a
random dropout mask; the clean test set is a module-level tensor used by `evaluate`."""

import torch
import torch.nn as nn

torch.manual_seed(0)
N_FEATURES = 20
BASIS = torch.randn(3, N_FEATURES)


def make_data(n):
    codes = torch.randn(n, 3)
    return torch.tanh(codes @ BASIS)


X_train = make_data(256)
X_test = make_data(64)


class AutoEncoder(nn.Module):
    def __init__(self, bottleneck=4):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(N_FEATURES, 12), nn.ReLU(), nn.Linear(12, bottleneck))
        self.decoder = nn.Sequential(nn.Linear(bottleneck, 12), nn.ReLU(), nn.Linear(12, N_FEATURES))

    def forward(self, x):
        return self.decoder(self.encoder(x))


def corrupt(x, noise_std=0.2, drop_prob=0.15):
    noisy = x + noise_std * torch.randn(x.size())
    keep = torch.rand(x.shape) > drop_prob
    return noisy * keep


def evaluate(model):
    with torch.no_grad():
        return nn.functional.mse_loss(model(X_test), X_test).item()


def main():
    model = AutoEncoder()
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    batch_size = 32
    for epoch in range(5):
        perm = torch.randperm(X_train.size(0))
        for i in range(0, X_train.size(0), batch_size):
            clean = X_train[perm[i : i + batch_size]]
            recon = model(corrupt(clean))
            loss = nn.functional.mse_loss(recon, clean)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch} test mse {evaluate(model):.5f}")
    print(f"final loss {evaluate(model):.8f}")


if __name__ == "__main__":
    main()
