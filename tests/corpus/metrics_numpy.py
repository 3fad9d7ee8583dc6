"""Metrics computed with NumPy from model outputs: .numpy(), .item(), .tolist()."""

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    torch.manual_seed(0)
    points = torch.randn(120, 2)
    classes = (points.norm(dim=1) > 1.1).long()
    loader = DataLoader(TensorDataset(points, classes), batch_size=24)
    model = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 2))
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.3)
    losses = []
    for epoch in range(3):
        for x, y in loader:
            optimizer.zero_grad()
            logits = model(x)
            loss = criterion(logits, y)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    predictions, truths = [], []
    with torch.no_grad():
        for x, y in loader:
            probs = torch.softmax(model(x), dim=1)
            predictions.append(probs.numpy())
            truths.extend(y.tolist())
    scores = np.concatenate(predictions)
    accuracy = float(np.mean(scores.argmax(axis=1) == np.array(truths)))
    print(f"accuracy {accuracy:.3f} mean loss {np.mean(losses):.4f}")
    print(f"final loss {losses[-1]:.8f}")


if __name__ == "__main__":
    main()
