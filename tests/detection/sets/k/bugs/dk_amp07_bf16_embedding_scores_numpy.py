# source: https://github.com/QwenLM/Qwen3-VL-Embedding/issues/53
# area: AMP
# bug: on a GPU the embedder runs in bfloat16, so the similarity scores are bfloat16 and .numpy() raises "Got unsupported ScalarType BFloat16"
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

LABELS = ["World", "Sports", "Business", "Sci/Tech"]


@dataclass
class EmbedderConfig:
    vocab_size: int = 500
    hidden: int = 64
    out_dim: int = 32
    max_len: int = 16
    torch_dtype: torch.dtype = field(default_factory=lambda: torch.bfloat16 if torch.cuda.is_available() else torch.float32)


class ToyTokenizer:
    def __init__(self, vocab_size, max_len):
        self.vocab_size, self.max_len = vocab_size, max_len

    def __call__(self, texts):
        ids = torch.zeros(len(texts), self.max_len, dtype=torch.long)
        mask = torch.zeros(len(texts), self.max_len, dtype=torch.long)
        for i, t in enumerate(texts):
            toks = [sum(map(ord, w)) % (self.vocab_size - 1) + 1 for w in t.lower().split()][: self.max_len]
            ids[i, : len(toks)] = torch.tensor(toks)
            mask[i, : len(toks)] = 1
        return ids, mask


class TextEmbeddingModel(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab_size, cfg.hidden)
        self.encoder = nn.TransformerEncoderLayer(cfg.hidden, 4, cfg.hidden * 2, batch_first=True)
        self.proj = nn.Linear(cfg.hidden, cfg.out_dim)

    def forward(self, ids, mask):
        h = self.encoder(self.embed(ids), src_key_padding_mask=mask == 0)
        m = mask.unsqueeze(-1).to(h.dtype)
        pooled = (h * m).sum(1) / m.sum(1).clamp_min(1)
        return F.normalize(self.proj(pooled), dim=-1)


class Embedder:
    def __init__(self, cfg, device):
        self.device = device
        self.tokenizer = ToyTokenizer(cfg.vocab_size, cfg.max_len)
        self.model = TextEmbeddingModel(cfg).to(device=device, dtype=cfg.torch_dtype).eval()

    @torch.inference_mode()
    def process(self, inputs):
        texts = [f"{x.get('instruction', '')} {x['text']}" for x in inputs]
        ids, mask = self.tokenizer(texts)
        return self.model(ids.to(self.device), mask.to(self.device))


def retrieve_topk(query_embeddings, corpus_embeddings, k):
    similarity_scores = query_embeddings @ corpus_embeddings.T
    results = []
    for i in range(len(query_embeddings)):
        scores = similarity_scores[i].cpu().numpy()  # expect: any
        ranked = np.argsort(scores)[::-1][:k]
        results.append([(LABELS[j], float(scores[j])) for j in ranked])
    return results


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    embedder = Embedder(EmbedderConfig(), device)
    queries = [
        {"text": "the striker scored twice in the final", "instruction": "Classify the news article."},
        {"text": "shares fell after the quarterly earnings report", "instruction": "Classify the news article."},
        {"text": "new chip doubles battery life of laptops", "instruction": "Classify the news article."},
    ]
    corpus = [{"text": f"news about {label.lower()}"} for label in LABELS]
    q_emb = embedder.process(queries)
    c_emb = embedder.process(corpus)
    for q, res in zip(queries, retrieve_topk(q_emb, c_emb, len(LABELS))):
        print(q["text"][:40], "->", res[0][0], f"{res[0][1]:.3f}")


if __name__ == "__main__":
    main()
