# source: https://github.com/lightonai/pylate/issues/239
# area: dtype
# bug: the eval helper min-max normalises fp16 scores with a 1e-8 guard that rounds to 0 in float16, so query groups whose candidates all score the same give 0/0 = NaN and poison the metric on the GPU
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
use_half = torch.cuda.is_available()
VOCAB, DIM, PAD = 100, 32, 0


class BiEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, DIM, padding_idx=PAD)
        self.proj = nn.Linear(DIM, DIM)

    def encode(self, ids):
        mask = ids.ne(PAD).unsqueeze(-1).to(self.emb.weight.dtype)
        pooled = (self.emb(ids) * mask).sum(-2) / mask.sum(-2).clamp(min=1)
        return self.proj(pooled)

    def forward(self, queries, docs):
        # queries: (B, Tq); docs: (B, K, Td) -> scores (B, K)
        q = self.encode(queries)
        d = self.encode(docs)
        return torch.einsum("bd,bkd->bk", q, d)


def normalize_scores(scores):
    mn = scores.min(dim=-1, keepdim=True).values
    mx = scores.max(dim=-1, keepdim=True).values
    return (scores - mn) / (mx - mn + 1e-8)  # expect: any


def make_eval_set(n_queries=16, k=5, tq=6, td=10):
    queries = torch.randint(1, VOCAB, (n_queries, tq))
    docs = torch.randint(1, VOCAB, (n_queries, k, td))
    docs[-3:] = PAD  # the last queries have no retrieved candidates (all padding)
    gold = torch.zeros(n_queries, dtype=torch.long)
    return queries, docs, gold


@torch.no_grad()
def evaluate(model, queries, docs, gold, batch_size=8):
    model.eval()
    gold_scores = []
    for i in range(0, len(queries), batch_size):
        q = queries[i:i + batch_size].to(device)
        d = docs[i:i + batch_size].to(device)
        g = gold[i:i + batch_size].to(device)
        norm = normalize_scores(model(q, d))
        gold_scores.append(norm.gather(1, g[:, None]).squeeze(1).float())
    return torch.cat(gold_scores).mean().item()


if __name__ == "__main__":
    model = BiEncoder().to(device)
    if use_half:
        model = model.half()
    queries, docs, gold = make_eval_set()
    score = evaluate(model, queries, docs, gold)
    print(f"mean normalised gold score: {score:.4f}")
