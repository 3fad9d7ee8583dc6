"""A siamese network with a contrastive loss on pairs of 2-D "signatures".

The pair dataset returns (x1, x2, same) with the target made in __getitem__; the margin is
a module-level tensor; evaluation thresholds the distance and reports the mean loss.
"""

import argparse
import random

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

MARGIN = torch.tensor(2.0)


def make_prototypes(n_classes, dim, generator):
    return torch.randn(n_classes, dim, generator=generator) * 2


class PairDataset(Dataset):
    def __init__(self, prototypes, n_pairs, seed):
        self.prototypes = prototypes
        self.rng = random.Random(seed)
        self.gen = torch.Generator().manual_seed(seed)
        self.pairs = []
        for _ in range(n_pairs):
            a = self.rng.randrange(len(prototypes))
            same = self.rng.random() < 0.5
            b = a if same else (a + self.rng.randrange(1, len(prototypes))) % len(prototypes)
            noise = 0.5 * torch.randn(2, prototypes.size(1), generator=self.gen)
            self.pairs.append((prototypes[a] + noise[0], prototypes[b] + noise[1], same))

    def __len__(self):
        return len(self.pairs)

    def __getitem__(self, index):
        x1, x2, same = self.pairs[index]
        return x1, x2, torch.tensor(float(same), dtype=torch.float32)


class SiameseNetwork(nn.Module):
    def __init__(self, in_dim, emb_dim=8):
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(in_dim, 32), nn.ReLU(), nn.Linear(32, emb_dim))

    def forward_once(self, x):
        return self.fc(x)

    def forward(self, input1, input2):
        return self.forward_once(input1), self.forward_once(input2)


class ContrastiveLoss(nn.Module):
    def forward(self, out1, out2, label):
        distance = F.pairwise_distance(out1, out2)
        positive = label * distance.pow(2)
        negative = (1 - label) * torch.clamp(MARGIN - distance, min=0.0).pow(2)
        return torch.mean(positive + negative)


def evaluate(model, loader, criterion, threshold=1.0):
    model.eval()
    total, correct, count = 0.0, 0, 0
    with torch.no_grad():
        for x1, x2, label in loader:
            out1, out2 = model(x1, x2)
            total += criterion(out1, out2, label).item() * len(label)
            predicted_same = (F.pairwise_distance(out1, out2) < threshold).float()
            correct += (predicted_same == label).sum().item()
            count += len(label)
    return total / count, correct / count


def main():
    parser = argparse.ArgumentParser(description="Siamese network example")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--lr", type=float, default=0.005)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    prototypes = make_prototypes(5, 6, torch.Generator().manual_seed(args.seed))
    train_loader = DataLoader(PairDataset(prototypes, 160, seed=1), batch_size=args.batch_size, shuffle=True)
    test_loader = DataLoader(PairDataset(prototypes, 64, seed=2), batch_size=args.batch_size)
    model = SiameseNetwork(6)
    criterion = ContrastiveLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    for epoch in range(1, args.epochs + 1):
        model.train()
        for x1, x2, label in train_loader:
            optimizer.zero_grad()
            out1, out2 = model(x1, x2)
            loss = criterion(out1, out2, label)
            loss.backward()
            optimizer.step()
        test_loss, acc = evaluate(model, test_loader, criterion)
        print(f"epoch {epoch} test loss {test_loss:.4f} acc {acc:.3f}")
    print(f"final loss {test_loss:.8f}")


if __name__ == "__main__":
    main()
