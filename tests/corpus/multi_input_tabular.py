"""A model with two inputs: numeric columns and categorical codes with embeddings.

The dataset returns dict samples; the default collate makes dict batches; class weights
are a module-level tensor handed to the loss built inside the training function.
"""

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

CARDINALITIES = [5, 3, 7]
CLASS_WEIGHTS = torch.tensor([1.0, 2.0])


class TabularDataset(Dataset):
    def __init__(self, n, seed):
        rng = np.random.default_rng(seed)
        self.numeric = rng.normal(size=(n, 4)).astype(np.float32)
        self.categorical = np.stack([rng.integers(0, c, size=n) for c in CARDINALITIES], axis=1)
        logit = self.numeric[:, 0] - self.numeric[:, 2] + (self.categorical[:, 0] == 2) * 1.5
        self.target = (logit > 0.8).astype(np.int64)

    def __len__(self):
        return len(self.target)

    def __getitem__(self, i):
        return {
            "numeric": torch.from_numpy(self.numeric[i]),
            "categorical": torch.from_numpy(self.categorical[i]),
            "target": torch.tensor(self.target[i]),
        }


class WideAndDeep(nn.Module):
    def __init__(self, n_numeric=4, emb_dim=3, hidden=24):
        super().__init__()
        self.embeddings = nn.ModuleList([nn.Embedding(c, emb_dim) for c in CARDINALITIES])
        self.bn = nn.BatchNorm1d(n_numeric)
        deep_in = n_numeric + emb_dim * len(CARDINALITIES)
        self.deep = nn.Sequential(nn.Linear(deep_in, hidden), nn.ReLU(), nn.Linear(hidden, 2))
        self.wide = nn.Linear(n_numeric, 2)

    def forward(self, numeric, categorical):
        embedded = [emb(categorical[:, i]) for i, emb in enumerate(self.embeddings)]
        numeric = self.bn(numeric)
        deep_in = torch.cat([numeric] + embedded, dim=1)
        return self.deep(deep_in) + self.wide(numeric)


def train(model, loader, epochs, lr):
    criterion = nn.CrossEntropyLoss(weight=CLASS_WEIGHTS)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    for epoch in range(epochs):
        model.train()
        for batch in loader:
            optimizer.zero_grad()
            logits = model(batch["numeric"], batch["categorical"])
            loss = criterion(logits, batch["target"])
            loss.backward()
            optimizer.step()
    return criterion


def evaluate(model, loader, criterion):
    model.eval()
    losses = []
    with torch.no_grad():
        for batch in loader:
            logits = model(batch["numeric"], batch["categorical"])
            losses.append(criterion(logits, batch["target"]).item())
    return float(np.mean(losses))


def main():
    torch.manual_seed(2)
    train_loader = DataLoader(TabularDataset(256, seed=0), batch_size=32, shuffle=True)
    val_loader = DataLoader(TabularDataset(96, seed=1), batch_size=32)
    model = WideAndDeep()
    criterion = train(model, train_loader, epochs=3, lr=0.01)
    print(f"final loss {evaluate(model, val_loader, criterion):.8f}")


if __name__ == "__main__":
    main()
