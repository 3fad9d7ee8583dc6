# source: https://github.com/helmholtz-analytics/heat/issues/657
# area: dtype
# bug: the item co-occurrence matrix is built with a matmul of int64 one-hot session matrices; CUDA has no integer GEMM ("addmm_cuda" not implemented for 'Long')
import torch
import torch.nn.functional as F
from dataclasses import dataclass


@dataclass
class CoocConfig:
    num_items: int = 400
    num_sessions: int = 1500
    max_session_len: int = 10
    batch_sessions: int = 256
    top_k: int = 10
    seed: int = 7


def make_sessions(cfg):
    gen = torch.Generator().manual_seed(cfg.seed)
    # items cluster in "themes" so co-occurrence has signal
    themes = torch.randint(0, cfg.num_items, (40, 12), generator=gen)
    sessions = []
    for _ in range(cfg.num_sessions):
        theme = themes[torch.randint(0, themes.size(0), (1,), generator=gen).item()]
        n = torch.randint(3, cfg.max_session_len + 1, (1,), generator=gen).item()
        picks = theme[torch.randint(0, theme.numel(), (n,), generator=gen)]
        sessions.append(picks)
    return sessions


class CooccurrenceRecommender:
    def __init__(self, cfg, device):
        self.cfg = cfg
        self.device = device
        self.cooc = None

    def _basket_matrix(self, sessions):
        rows = [F.one_hot(s, self.cfg.num_items).amax(dim=0) for s in sessions]
        return torch.stack(rows).to(self.device)

    def fit(self, sessions):
        n = self.cfg.num_items
        cooc = torch.zeros(n, n, dtype=torch.long, device=self.device)
        for start in range(0, len(sessions), self.cfg.batch_sessions):
            baskets = self._basket_matrix(sessions[start:start + self.cfg.batch_sessions])
            cooc += baskets.t() @ baskets  # expect: any
        cooc.fill_diagonal_(0)
        self.cooc = cooc
        return self

    def recommend(self, history):
        history = history.to(self.device)
        scores = self.cooc.index_select(0, history).sum(dim=0).float()
        scores[history] = float("-inf")
        return scores.topk(self.cfg.top_k).indices


def hit_rate(model, sessions, k):
    hits = 0
    for s in sessions:
        recs = model.recommend(s[:-1])
        hits += int((recs == s[-1].to(recs.device)).any())
    return hits / max(len(sessions), 1)


def main():
    cfg = CoocConfig()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    sessions = make_sessions(cfg)
    split = int(0.9 * len(sessions))
    train, test = sessions[:split], sessions[split:]
    model = CooccurrenceRecommender(cfg, device).fit(train)
    print(f"pairs observed: {int((model.cooc > 0).sum())}")
    print(f"hit@{cfg.top_k}: {hit_rate(model, test, cfg.top_k):.3f}")


if __name__ == "__main__":
    main()
