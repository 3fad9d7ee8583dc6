# source: https://github.com/pytorch/pytorch/issues/32137
# area: dtype
# bug: F.normalize keeps its default eps=1e-12, which rounds to 0 in fp16, so empty documents embedded in half precision on the GPU become NaN and poison the retrieval scores
import torch
import torch.nn as nn
import torch.nn.functional as F


class BagEncoder(nn.Module):
    """Mean-pooled token embeddings followed by a bias-free projection."""

    def __init__(self, vocab_size=1000, dim=96, out_dim=64):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, dim, padding_idx=0)
        self.proj = nn.Linear(dim, out_dim, bias=False)

    def forward(self, ids):
        keep = ids.ne(0).unsqueeze(-1)
        summed = (self.tok(ids) * keep).sum(dim=1)
        count = keep.sum(dim=1).clamp(min=1)
        pooled = self.proj(summed / count)
        return F.normalize(pooled, dim=-1)  # expect: any


class DenseIndex:
    def __init__(self, encoder, device):
        self.encoder = encoder
        self.device = device
        self.vectors = []

    @torch.no_grad()
    def add(self, doc_ids):
        vecs = self.encoder(doc_ids.to(self.device))
        self.vectors.append(vecs)

    @torch.no_grad()
    def search(self, query_ids, k=3):
        bank = torch.cat(self.vectors, dim=0)
        q = self.encoder(query_ids.to(self.device))
        scores = q @ bank.T
        return scores.topk(k, dim=-1)


def synthetic_corpus(num_docs, max_len, vocab, gen):
    docs = torch.randint(1, vocab, (num_docs, max_len), generator=gen)
    lengths = torch.randint(0, max_len + 1, (num_docs,), generator=gen)
    lengths[::7] = 0
    mask = torch.arange(max_len).unsqueeze(0) >= lengths.unsqueeze(1)
    docs[mask] = 0
    return docs


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.float16 if device.type == "cuda" else torch.float32
    gen = torch.Generator().manual_seed(1)

    encoder = BagEncoder().to(device=device, dtype=dtype).eval()
    index = DenseIndex(encoder, device)
    corpus = synthetic_corpus(256, 32, 1000, gen)
    for chunk in corpus.split(64):
        index.add(chunk)

    queries = corpus[:8].clone()
    scores, hits = index.search(queries, k=3)
    finite = torch.isfinite(scores).all()
    print("top hits:", hits[:4].tolist())
    print("all scores finite:", bool(finite))


if __name__ == "__main__":
    main()
