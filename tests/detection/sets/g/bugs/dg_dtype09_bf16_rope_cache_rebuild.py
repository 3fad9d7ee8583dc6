# source: https://github.com/huggingface/transformers/issues/29496
# area: dtype
# bug: when the rotary cache is rebuilt for a longer input, positions and inv_freq take the dtype of the inv_freq buffer, which model.to(bfloat16) on the GPU has cast to bf16, so cos/sin for far positions are wrong
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class RotaryEmbedding(nn.Module):
    def __init__(self, head_dim, max_positions=256, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self._build_cache(max_positions, inv_freq.device)

    def _build_cache(self, seq_len, device):
        self.cached_len = seq_len
        t = torch.arange(seq_len, device=device, dtype=self.inv_freq.dtype)  # expect[rope]: any
        freqs = torch.outer(t, self.inv_freq)  # expect[rope]: any
        emb = torch.cat([freqs, freqs], dim=-1)
        self.register_buffer("cos_cached", emb.cos(), persistent=False)
        self.register_buffer("sin_cached", emb.sin(), persistent=False)

    def forward(self, x, seq_len):
        if seq_len > self.cached_len:
            self._build_cache(seq_len, x.device)
        return self.cos_cached[:seq_len].to(x.dtype), self.sin_cached[:seq_len].to(x.dtype)


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.out = nn.Linear(dim, dim, bias=False)
        self.rotary = RotaryEmbedding(self.head_dim)

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        cos, sin = self.rotary(x, n)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, n, -1))


class TinyDecoder(nn.Module):
    def __init__(self, vocab=256, dim=64, heads=4, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList([Attention(dim, heads) for _ in range(layers)])
        self.norms = nn.ModuleList([nn.LayerNorm(dim) for _ in range(layers)])
        self.lm_head = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids):
        h = self.embed(ids)
        for norm, block in zip(self.norms, self.blocks):
            h = h + block(norm(h))
        return self.lm_head(h)


@torch.no_grad()
def long_context_perplexity(model, ids, chunk):
    total_nll = torch.zeros((), device=ids.device)
    count = 0
    for start in range(0, ids.size(1) - 1, chunk):
        window = ids[:, : start + chunk + 1]
        logits = model(window[:, :-1])[:, start:]
        target = window[:, start + 1:]
        total_nll += F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), target.reshape(-1), reduction="sum")
        count += target.numel()
    return math.exp((total_nll / count).item())


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    model = TinyDecoder().to(device=device, dtype=dtype).eval()
    ids = torch.randint(0, 256, (1, 1025), device=device)
    ppl = long_context_perplexity(model, ids, chunk=512)
    print(f"perplexity over {ids.size(1) - 1} tokens: {ppl:.2f}")


if __name__ == "__main__":
    main()
