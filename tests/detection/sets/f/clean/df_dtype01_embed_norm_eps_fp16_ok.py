# twin of: bugs/df_dtype01_embed_norm_eps_fp16.py
# area: dtype
# correct: the norm is computed and clamped in float32, where 1e-12 is representable, then cast back to the table dtype
import torch
import torch.nn as nn
from dataclasses import dataclass


@dataclass
class EncoderConfig:
    vocab_size: int = 500
    dim: int = 64
    pad_id: int = 0
    unk_id: int = 1
    normalize: bool = True
    norm_eps: float = 1e-12


class StaticEmbeddingEncoder(nn.Module):
    """Bag-of-token-vectors sentence encoder (mean pooling over a static table)."""

    def __init__(self, cfg: EncoderConfig):
        super().__init__()
        self.cfg = cfg
        self.table = nn.Embedding(cfg.vocab_size, cfg.dim, padding_idx=cfg.pad_id)
        with torch.no_grad():
            self.table.weight[cfg.unk_id].zero_()

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        mask = (ids != self.cfg.pad_id) & (ids != self.cfg.unk_id)
        vecs = self.table(ids) * mask.unsqueeze(-1).to(self.table.weight.dtype)
        counts = mask.sum(dim=1, keepdim=True).clamp(min=1).to(vecs.dtype)
        pooled = vecs.sum(dim=1) / counts
        if self.cfg.normalize:
            norms = pooled.float().norm(dim=-1, keepdim=True).clamp_min(self.cfg.norm_eps)
            pooled = (pooled.float() / norms).to(vecs.dtype)
        return pooled


def tokenize(texts, vocab_size, max_len=12):
    out = torch.zeros(len(texts), max_len, dtype=torch.long)
    for i, text in enumerate(texts):
        toks = [2 + (sum(map(ord, w)) % (vocab_size - 2)) if w.isalpha() else 1 for w in text.split()]
        toks = toks[:max_len]
        if toks:
            out[i, : len(toks)] = torch.tensor(toks)
    return out


def build_encoder(device):
    cfg = EncoderConfig()
    model = StaticEmbeddingEncoder(cfg)
    dtype = torch.float16 if device.type == "cuda" else torch.float32
    return model.to(device=device, dtype=dtype).eval()


@torch.no_grad()
def encode_corpus(model, texts, device, batch_size=4):
    chunks = []
    for start in range(0, len(texts), batch_size):
        ids = tokenize(texts[start : start + batch_size], model.cfg.vocab_size).to(device)
        chunks.append(model(ids))
    return torch.cat(chunks)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    model = build_encoder(device)
    corpus = [
        "the quick brown fox",
        "",
        "jumps over the lazy dog",
        "1234 5678",
        "a small static embedding model",
        "   ",
    ]
    emb = encode_corpus(model, corpus, device)
    query = encode_corpus(model, ["lazy brown dog"], device)
    scores = (emb.float() @ query.float().t()).squeeze(1)
    best = torch.nan_to_num(scores, nan=-2.0).argmax().item()
    print("embeddings", tuple(emb.shape), emb.dtype)
    print("scores", [round(s, 3) for s in scores.tolist()])
    print("best match:", repr(corpus[best]))


if __name__ == "__main__":
    main()
