# source: https://github.com/skorch-dev/skorch/issues/734
# area: device placement
# bug: get_loss takes the per-sample weights straight from the CPU batch dict while the unreduced loss is on the GPU
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class WeightedTabularDataset(Dataset):
    def __init__(self, features, labels, sample_weight):
        self.features = features
        self.labels = labels
        self.sample_weight = sample_weight

    def __len__(self):
        return self.labels.shape[0]

    def __getitem__(self, i):
        return {"features": self.features[i], "sample_weight": self.sample_weight[i]}, self.labels[i]


class MLPClassifier(nn.Module):
    def __init__(self, n_in=20, n_hidden=32, n_out=2, p=0.3):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_in, n_hidden), nn.ReLU(), nn.Dropout(p),
                                 nn.Linear(n_hidden, n_hidden), nn.ReLU(),
                                 nn.Linear(n_hidden, n_out))

    def forward(self, features):
        return self.net(features)


class SampleWeightedNet:
    """Small sklearn-style wrapper: fit/predict_proba with per-sample weighted loss."""

    def __init__(self, module, device, lr=1e-2, max_epochs=5, batch_size=64):
        self.device = device
        self.module = module.to(device)
        self.criterion = nn.CrossEntropyLoss(reduction="none")
        self.optimizer = torch.optim.SGD(self.module.parameters(), lr=lr, momentum=0.9)
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.history = []

    def get_loss(self, y_pred, y_true, X):
        loss_unreduced = self.criterion(y_pred, y_true)
        sample_weight = X["sample_weight"]  # expect[sw]: any
        return (sample_weight * loss_unreduced).mean()  # expect[sw]: any

    def train_step(self, X, y):
        self.module.train()
        features = X["features"].to(self.device)
        y = y.to(self.device)
        y_pred = self.module(features)
        loss = self.get_loss(y_pred, y, X)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.detach()

    def fit(self, dataset):
        loader = DataLoader(dataset, batch_size=self.batch_size, shuffle=True)
        for epoch in range(self.max_epochs):
            losses = [self.train_step(X, y) for X, y in loader]
            self.history.append(torch.stack(losses).mean().item())
        return self

    @torch.no_grad()
    def predict_proba(self, features):
        self.module.eval()
        return self.module(features.to(self.device)).softmax(dim=-1).cpu()


def make_classification(n=1000, n_features=20, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, n_features, generator=g)
    w = torch.randn(n_features, generator=g)
    y = (X @ w + 0.3 * torch.randn(n, generator=g) > 0).long()
    return X, y


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    X, y = make_classification()
    sample_weight = torch.randint(1, 3, (X.shape[0],)).float()
    net = SampleWeightedNet(MLPClassifier(), device).fit(WeightedTabularDataset(X, y, sample_weight))
    acc = (net.predict_proba(X).argmax(dim=1) == y).float().mean().item()
    print("loss per epoch:", [round(v, 4) for v in net.history], "train acc:", round(acc, 3))
