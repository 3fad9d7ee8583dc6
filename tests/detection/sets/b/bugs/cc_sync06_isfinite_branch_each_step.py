# source: https://github.com/facebookresearch/fairchem/pull/2203
# area: transfer & sync
# bug: a Python `if` on a CUDA bool tensor (non-finite loss guard) runs every step, forcing a device->host sync before the backward pass can even be queued
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class EnergyModel(nn.Module):
    def __init__(self, n_feat=12, hidden=48):
        super().__init__()
        self.mlp = nn.Sequential(
            nn.Linear(n_feat, hidden), nn.SiLU(),
            nn.Linear(hidden, hidden), nn.SiLU(),
            nn.Linear(hidden, 1),
        )

    def forward(self, feats):
        return self.mlp(feats).squeeze(-1)


def weighted_loss(pred, target, weight):
    return (weight * (pred - target) ** 2).sum() / weight.sum()


def train(model, loader, epochs=3):
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    skipped = 0
    for epoch in range(epochs):
        for feats, energy, weight in loader:
            feats, energy, weight = feats.to(device), energy.to(device), weight.to(device)
            loss = weighted_loss(model(feats), energy, weight)
            if not torch.isfinite(loss):  # expect: any
                skipped += 1
                opt.zero_grad(set_to_none=True)
                continue
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    return skipped


def main():
    feats = torch.randn(600, 12)
    energy = feats.pow(2).sum(dim=1) * 0.1
    weight = torch.rand(600) + 0.5
    loader = DataLoader(TensorDataset(feats, energy, weight), batch_size=40, shuffle=True)
    model = EnergyModel().to(device)
    skipped = train(model, loader)
    print("skipped batches:", skipped)


if __name__ == "__main__":
    main()
