# twin of: bugs/dd_dist01_global_rank_device.py
# area: porting & distributed
# correct: the CUDA device index comes from LOCAL_RANK (the process's GPU on its own node), not the global rank
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


def get_device_name() -> str:
    if torch.cuda.is_available():
        if "LOCAL_RANK" in os.environ:
            return f"cuda:{int(os.environ['LOCAL_RANK'])}"
        if dist.is_available() and dist.is_initialized():
            return f"cuda:{dist.get_rank() % torch.cuda.device_count()}"
        return "cuda"
    return "cpu"


class MeanPoolEncoder(nn.Module):
    def __init__(self, vocab_size=1000, dim=64):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, dim, padding_idx=0)
        self.proj = nn.Sequential(nn.Linear(dim, dim), nn.Tanh(), nn.Linear(dim, dim))

    def forward(self, input_ids):
        mask = (input_ids != 0).unsqueeze(-1).float()
        tokens = self.embed(input_ids) * mask
        pooled = tokens.sum(1) / mask.sum(1).clamp(min=1.0)
        return F.normalize(self.proj(pooled), dim=-1)


class CorpusEncoder:
    def __init__(self, model: nn.Module, batch_size: int = 32):
        self.device = torch.device(get_device_name())
        if self.device.type == "cuda":
            torch.cuda.set_device(self.device)
        self.model = model.to(self.device).eval()
        self.batch_size = batch_size

    def _shard(self, corpus):
        if dist.is_available() and dist.is_initialized():
            rank, world = dist.get_rank(), dist.get_world_size()
            return corpus[rank::world]
        return corpus

    @torch.no_grad()
    def encode(self, corpus: torch.Tensor) -> torch.Tensor:
        shard = self._shard(corpus)
        chunks = []
        for start in range(0, shard.size(0), self.batch_size):
            batch = shard[start:start + self.batch_size].to(self.device)
            chunks.append(self.model(batch))
        return torch.cat(chunks)


def build_corpus(n_docs=200, max_len=24, vocab_size=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, vocab_size, (n_docs, max_len), generator=g)
    lengths = torch.randint(4, max_len + 1, (n_docs,), generator=g)
    positions = torch.arange(max_len).unsqueeze(0)
    ids[positions >= lengths.unsqueeze(1)] = 0
    return ids


def main():
    if "RANK" in os.environ:
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        dist.init_process_group(backend)

    torch.manual_seed(0)
    encoder = CorpusEncoder(MeanPoolEncoder())
    corpus = build_corpus()
    embeddings = encoder.encode(corpus)
    queries = embeddings[:8]
    scores = queries @ embeddings.T
    top = scores.topk(3, dim=1).indices.cpu()
    print("embeddings:", tuple(embeddings.shape), "top-3 of first query:", top[0].tolist())

    if dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
