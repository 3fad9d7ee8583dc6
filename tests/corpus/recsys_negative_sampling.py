"""Matrix factorisation for implicit feedback with NumPy negative sampling, BPR loss, and
hit-rate@k computed in Python from top-k indices."""

import numpy as np
import torch
import torch.nn as nn

N_USERS, N_ITEMS, K = 30, 40, 5


def make_interactions(rng):
    user_taste = rng.integers(0, 4, size=N_USERS)
    item_genre = rng.integers(0, 4, size=N_ITEMS)
    pairs = [
        (u, i)
        for u in range(N_USERS)
        for i in range(N_ITEMS)
        if item_genre[i] == user_taste[u] and rng.random() < 0.7
    ]
    return np.array(pairs, dtype=np.int64)


class MF(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.user_emb = nn.Embedding(N_USERS, dim)
        self.item_emb = nn.Embedding(N_ITEMS, dim)
        nn.init.normal_(self.user_emb.weight, std=0.1)
        nn.init.normal_(self.item_emb.weight, std=0.1)

    def forward(self, users, items):
        return (self.user_emb(users) * self.item_emb(items)).sum(-1)

    def score_all(self, users):
        return self.user_emb(users) @ self.item_emb.weight.t()


def hit_rate(model, held_out, seen):
    users = torch.LongTensor(held_out[:, 0])
    with torch.no_grad():
        scores = model.score_all(users)
        for row, u in enumerate(held_out[:, 0]):
            scores[row, list(seen[u])] = -1e9
        top = torch.topk(scores, K, dim=1).indices.tolist()
    hits = [int(item in top[row]) for row, item in enumerate(held_out[:, 1])]
    return sum(hits) / len(hits)


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    pairs = rng.permutation(make_interactions(rng))
    held_out = pairs[:20]
    train_pairs = pairs[20:]
    seen = {u: set() for u in range(N_USERS)}
    for u, i in train_pairs:
        seen[u].add(i)
    model = MF()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    for epoch in range(8):
        order = rng.permutation(len(train_pairs))
        for start in range(0, len(order), 64):
            batch = train_pairs[order[start : start + 64]]
            users = torch.LongTensor(batch[:, 0])
            positives = torch.LongTensor(batch[:, 1])
            negatives = torch.from_numpy(rng.integers(0, N_ITEMS, size=len(batch)))
            loss = -torch.nn.functional.logsigmoid(model(users, positives) - model(users, negatives)).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    print(f"hit rate@{K}: {hit_rate(model, held_out, seen):.3f}")
    users = torch.from_numpy(held_out[:, 0])
    items = torch.from_numpy(held_out[:, 1])
    with torch.no_grad():
        held_out_loss = -torch.nn.functional.logsigmoid(model(users, items)).mean()
    print(f"final loss {held_out_loss.item():.8f}")


if __name__ == "__main__":
    main()
