# source: https://github.com/pytorch/pytorch/issues/89338
# area: dtype
# bug: item co-occurrence counts are an int64 matmul, which has no CUDA kernel ("addmm_cuda" not implemented for 'Long')
import torch
from dataclasses import dataclass


@dataclass
class RecConfig:
    num_users: int = 400
    num_items: int = 120
    interactions_per_user: int = 12
    top_k: int = 5
    min_support: int = 2
    seed: int = 0


def synthetic_sessions(cfg):
    g = torch.Generator().manual_seed(cfg.seed)
    users = torch.arange(cfg.num_users).repeat_interleave(cfg.interactions_per_user)
    popularity = torch.linspace(2.0, 0.2, cfg.num_items)
    items = torch.multinomial(popularity, users.numel(), replacement=True, generator=g)
    return users, items


class CooccurrenceRecommender:
    """Item-to-item recommender built from raw co-occurrence counts."""

    def __init__(self, cfg, device):
        self.cfg = cfg
        self.device = device
        self.counts = None
        self.item_freq = None

    def fit(self, users, items):
        cfg = self.cfg
        users = users.to(self.device)
        items = items.to(self.device)
        inter = torch.zeros(cfg.num_users, cfg.num_items, dtype=torch.long, device=self.device)  # expect[w]: any
        inter[users, items] = 1
        self.item_freq = inter.sum(dim=0)
        co = inter.t() @ inter  # expect[w]: any
        co.fill_diagonal_(0)
        co[co < cfg.min_support] = 0
        self.counts = co
        return self

    def similarity(self):
        freq = self.item_freq.clamp(min=1).float()
        denom = torch.sqrt(freq[:, None] * freq[None, :])
        return self.counts.float() / denom

    def recommend(self, history):
        sim = self.similarity()
        history = history.to(self.device)
        scores = sim[history].sum(dim=0)
        scores[history] = float("-inf")
        return scores.topk(self.cfg.top_k).indices


def hit_rate(model, users, items, cfg):
    hits = torch.zeros((), device=model.device)
    n_eval = 50
    for u in range(n_eval):
        hist = items[users == u]
        held_out, context = hist[-1], hist[:-1]
        recs = model.recommend(context)
        hits += (recs == held_out.to(model.device)).any().float()
    return hits / n_eval


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cfg = RecConfig()
    users, items = synthetic_sessions(cfg)
    model = CooccurrenceRecommender(cfg, device).fit(users, items)
    nnz = (model.counts > 0).sum()
    hr = hit_rate(model, users, items, cfg)
    print(f"non-zero pairs: {int(nnz)}  hit@{cfg.top_k}: {hr.item():.3f}")


if __name__ == "__main__":
    main()
