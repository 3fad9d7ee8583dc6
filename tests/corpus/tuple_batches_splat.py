"""A two-tower model fed as model(*inputs): the collate function returns
((query, document), relevance, n_pairs) with a tuple of inputs and a Python int."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader

DIM = 8


def make_pairs(n, generator):
    pairs = []
    for _ in range(n):
        query = torch.randn(DIM, generator=generator)
        relevant = bool(torch.rand(1, generator=generator) < 0.5)
        noise = 0.5 * torch.randn(DIM, generator=generator)
        document = query + noise if relevant else torch.randn(DIM, generator=generator)
        pairs.append((query, document, float(relevant)))
    return pairs


def collate_pairs(batch):
    queries = torch.stack([b[0] for b in batch])
    documents = torch.stack([b[1] for b in batch])
    relevance = torch.tensor([b[2] for b in batch])
    return (queries, documents), relevance, len(batch)


class TwoTower(nn.Module):
    def __init__(self, hidden=16):
        super().__init__()
        self.query_tower = nn.Sequential(nn.Linear(DIM, hidden), nn.ReLU(), nn.Linear(hidden, hidden))
        self.doc_tower = nn.Sequential(nn.Linear(DIM, hidden), nn.ReLU(), nn.Linear(hidden, hidden))
        self.scale = nn.Parameter(torch.tensor(5.0))

    def forward(self, query, document):
        q = F.normalize(self.query_tower(query), dim=-1)
        d = F.normalize(self.doc_tower(document), dim=-1)
        return self.scale * (q * d).sum(-1)


def run_epoch(model, loader, optimizer=None):
    total, seen = 0.0, 0
    for inputs, relevance, n_pairs in loader:
        scores = model(*inputs)
        loss = F.binary_cross_entropy_with_logits(scores - 2.5, relevance)
        if optimizer is not None:
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        total += loss.item() * n_pairs
        seen += n_pairs
    return total / seen


def main():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    train_loader = DataLoader(make_pairs(160, g), batch_size=16, shuffle=True, collate_fn=collate_pairs)
    val_loader = DataLoader(make_pairs(48, g), batch_size=16, collate_fn=collate_pairs)
    model = TwoTower()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for epoch in range(3):
        model.train()
        train_loss = run_epoch(model, train_loader, optimizer)
        model.eval()
        with torch.no_grad():
            val_loss = run_epoch(model, val_loader)
        print(f"epoch {epoch} train {train_loss:.4f} val {val_loss:.4f}")
    print(f"final loss {val_loss:.8f}")


if __name__ == "__main__":
    main()
