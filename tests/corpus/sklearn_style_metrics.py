"""Binary classifier scored with NumPy re-implementations of scikit-learn's metrics.

Probabilities are gathered batch by batch into a list, concatenated and handed to NumPy.
"""

import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class CreditDataset(Dataset):
    """Synthetic 'loan default' rows: income, debt, age, history length, a noise column."""

    def __init__(self, n, seed):
        rng = np.random.RandomState(seed)
        self.features = rng.normal(size=(n, 5)).astype(np.float32)
        score = 1.5 * self.features[:, 1] - self.features[:, 0] + 0.5 * self.features[:, 3]
        self.labels = (score + 0.3 * rng.normal(size=n) > 0).astype(np.float32)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        return torch.from_numpy(self.features[idx]), torch.tensor(self.labels[idx])


def precision_recall_f1(y_true, y_pred):
    tp = np.sum((y_pred == 1) & (y_true == 1))
    fp = np.sum((y_pred == 1) & (y_true == 0))
    fn = np.sum((y_pred == 0) & (y_true == 1))
    precision = tp / max(tp + fp, 1)
    recall = tp / max(tp + fn, 1)
    f1 = 2 * precision * recall / max(precision + recall, 1e-12)
    return precision, recall, f1


def roc_auc_score(y_true, scores):
    order = np.argsort(scores)
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    positives = y_true == 1
    n_pos, n_neg = positives.sum(), (~positives).sum()
    return (ranks[positives].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def predict_proba(model, loader):
    model.eval()
    all_probs, all_labels = [], []
    with torch.no_grad():
        for features, labels in loader:
            probs = torch.sigmoid(model(features).squeeze(1))
            all_probs.append(probs)
            all_labels.append(labels)
    return torch.cat(all_probs).numpy(), torch.cat(all_labels).numpy()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)

    train_loader = DataLoader(CreditDataset(256, seed=1), batch_size=32, shuffle=True)
    test_loader = DataLoader(CreditDataset(128, seed=2), batch_size=64)
    model = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)

    for epoch in range(args.epochs):
        model.train()
        for features, labels in train_loader:
            optimizer.zero_grad()
            logits = model(features).squeeze(1)
            loss = F.binary_cross_entropy_with_logits(logits, labels)
            loss.backward()
            optimizer.step()

    probs, y_true = predict_proba(model, test_loader)
    y_pred = (probs > 0.5).astype(np.float32)
    precision, recall, f1 = precision_recall_f1(y_true, y_pred)
    auc = roc_auc_score(y_true, probs)
    print(f"precision {precision:.3f} recall {recall:.3f} f1 {f1:.3f} auc {auc:.3f}")
    eps = 1e-7
    log_loss = -np.mean(y_true * np.log(probs + eps) + (1 - y_true) * np.log(1 - probs + eps))
    print(f"final loss {log_loss:.8f}")


if __name__ == "__main__":
    main()
