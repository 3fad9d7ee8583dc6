"""Metric learning with batch-hard triplet mining, then nearest-neighbour evaluation.

Mining builds identity masks with torch.eye and label comparisons; the k-NN accuracy
helper indexes the (CPU) gallery labels with indices computed from the embeddings.
"""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

N_CLASSES = 6
DIM = 10


def make_data(n, rng):
    centers = rng.normal(size=(N_CLASSES, DIM)) * 1.5
    labels = rng.integers(0, N_CLASSES, size=n)
    x = centers[labels] + rng.normal(size=(n, DIM))
    return torch.tensor(x, dtype=torch.float32), torch.tensor(labels)


class Embedder(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(DIM, 32), nn.ReLU(), nn.Linear(32, 8))

    def forward(self, x):
        return F.normalize(self.net(x), dim=1)


def batch_hard_triplet_loss(embeddings, labels, margin=0.3):
    dist = torch.cdist(embeddings, embeddings)
    same = labels.unsqueeze(0) == labels.unsqueeze(1)
    eye = torch.eye(len(labels), dtype=torch.bool)
    positive_mask = same & ~eye
    hardest_positive = (dist * positive_mask.float()).max(dim=1).values
    max_dist = dist.max().item()
    hardest_negative = (dist + max_dist * same.float()).min(dim=1).values
    return F.relu(hardest_positive - hardest_negative + margin).mean()


def knn_accuracy(model, gallery_x, gallery_y, query_x, query_y):
    with torch.no_grad():
        g = model(gallery_x)
        q = model(query_x)
    nearest = torch.cdist(q, g).argmin(dim=1)
    predicted = gallery_y[nearest]
    return (predicted == query_y).float().mean().item()


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    train_x, train_y = make_data(240, rng)
    test_x, test_y = make_data(60, rng)
    loader = DataLoader(TensorDataset(train_x, train_y), batch_size=48, shuffle=True)
    model = Embedder()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    for epoch in range(4):
        for x, y in loader:
            optimizer.zero_grad()
            loss = batch_hard_triplet_loss(model(x), y)
            loss.backward()
            optimizer.step()
    model.eval()
    print(f"1-NN accuracy {knn_accuracy(model, train_x, train_y, test_x, test_y):.3f}")
    with torch.no_grad():
        test_loss = batch_hard_triplet_loss(model(test_x), test_y)
    print(f"final loss {test_loss.item():.8f}")


if __name__ == "__main__":
    main()
