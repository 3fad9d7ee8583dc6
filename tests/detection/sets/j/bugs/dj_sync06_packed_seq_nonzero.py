# source: https://github.com/sgl-project/sglang/issues/9889
# area: transfer & sync
# bug: the encoder finds sequence starts with (positions == 0).cpu().nonzero() on every forward, a blocking device->host copy although the collate already knows the lengths
import torch
import torch.nn as nn


class PackedBatch:
    def __init__(self, input_ids, positions, seq_lens):
        self.input_ids = input_ids
        self.positions = positions
        self.seq_lens = seq_lens

    def to(self, device):
        return PackedBatch(self.input_ids.to(device), self.positions.to(device), self.seq_lens)


def pack_sequences(sequences):
    ids = torch.cat(sequences)
    positions = torch.cat([torch.arange(len(s)) for s in sequences])
    return PackedBatch(ids, positions, [len(s) for s in sequences])


class PackedEmbeddingEncoder(nn.Module):
    def __init__(self, vocab_size=5000, dim=64, max_len=128):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, dim)
        self.pos = nn.Embedding(max_len, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        self.norm = nn.LayerNorm(dim)

    def forward(self, batch):
        h = self.tok(batch.input_ids) + self.pos(batch.positions)
        h = self.norm(h + self.mlp(h))
        start_mask = batch.positions == 0
        start_indices = start_mask.cpu().nonzero()  # expect: any
        num_seqs = len(start_indices)
        seq_ids = torch.cumsum(start_mask.long(), dim=0) - 1
        pooled = h.new_zeros(num_seqs, h.shape[-1]).index_add_(0, seq_ids, h)
        counts = h.new_zeros(num_seqs).index_add_(0, seq_ids, torch.ones_like(seq_ids, dtype=h.dtype))
        emb = pooled / counts.unsqueeze(-1)
        return nn.functional.normalize(emb, dim=-1)


class EmbeddingService:
    def __init__(self, model, device, max_tokens=512):
        self.model = model.to(device).eval()
        self.device = device
        self.max_tokens = max_tokens

    def _batches(self, sequences):
        batch, tokens = [], 0
        for s in sequences:
            if batch and tokens + len(s) > self.max_tokens:
                yield batch
                batch, tokens = [], 0
            batch.append(s)
            tokens += len(s)
        if batch:
            yield batch

    @torch.no_grad()
    def embed(self, sequences):
        outs = []
        for group in self._batches(sequences):
            packed = pack_sequences(group).to(self.device)
            outs.append(self.model(packed))
        return torch.cat(outs).cpu()


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    g = torch.Generator().manual_seed(1)
    lengths = torch.randint(8, 120, (300,), generator=g).tolist()
    sequences = [torch.randint(0, 5000, (n,), generator=g) for n in lengths]
    service = EmbeddingService(PackedEmbeddingEncoder(), device)
    emb = service.embed(sequences)
    sims = emb[:5] @ emb[:5].T
    print("embeddings", tuple(emb.shape), "self-sim diag", sims.diag().round(decimals=3).tolist())


if __name__ == "__main__":
    main()
