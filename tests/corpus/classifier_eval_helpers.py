"""A tabular classifier whose evaluation and metric helpers take tensors from their callers.

The validation split is made once in main and handed to `evaluate`; `accuracy` and
`confusion_matrix` receive predictions and targets that arrive by different paths.
"""

import argparse
import random

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

NUM_CLASSES = 3


def make_blobs(n, generator):
    centers = torch.tensor([[2.0, 0.0], [-1.0, 1.5], [-1.0, -1.5]])
    labels = torch.arange(n) % NUM_CLASSES
    points = centers[labels] + 0.8 * torch.randn(n, 2, generator=generator)
    return points, labels


class Net(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.fc1 = nn.Linear(2, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, NUM_CLASSES)

    def forward(self, x):
        x = torch.relu(self.fc1(x))
        x = torch.relu(self.fc2(x))
        return self.out(x)


def accuracy(preds, targets):
    return (preds == targets).float().mean().item()


def confusion_matrix(preds, targets):
    matrix = np.zeros((NUM_CLASSES, NUM_CLASSES), dtype=np.int64)
    for p, t in zip(preds.tolist(), targets.tolist()):
        matrix[t, p] += 1
    return matrix


def evaluate(model, X_val, y_val, criterion):
    model.eval()
    with torch.no_grad():
        logits = model(X_val)
        loss = criterion(logits, y_val).item()
        preds = logits.argmax(dim=1)
    model.train()
    return loss, accuracy(preds, y_val), confusion_matrix(preds, y_val)


def train_epoch(model, loader, criterion, optimizer):
    total = 0.0
    for inputs, labels in loader:
        optimizer.zero_grad()
        loss = criterion(model(inputs), labels)
        loss.backward()
        optimizer.step()
        total += loss.item() * inputs.size(0)
    return total / len(loader.dataset)


def main():
    parser = argparse.ArgumentParser(description="blob classifier")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()

    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    generator = torch.Generator().manual_seed(args.seed)
    X_train, y_train = make_blobs(192, generator)
    X_val, y_val = make_blobs(96, generator)

    train_loader = DataLoader(
        TensorDataset(X_train, y_train), batch_size=args.batch_size, shuffle=True
    )
    model = Net()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    for epoch in range(1, args.epochs + 1):
        train_loss = train_epoch(model, train_loader, criterion, optimizer)
        val_loss, val_acc, matrix = evaluate(model, X_val, y_val, criterion)
        print(f"epoch {epoch} train {train_loss:.4f} val {val_loss:.4f} acc {val_acc:.3f}")
    print("confusion matrix:")
    print(matrix)
    print(f"final loss {val_loss:.8f}")


if __name__ == "__main__":
    main()
