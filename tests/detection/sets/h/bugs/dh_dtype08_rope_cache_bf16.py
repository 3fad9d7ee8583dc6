# source: https://github.com/NVIDIA/Megatron-LM/issues/744
# area: dtype
# bug: model.to(bfloat16) on the GPU also casts the inv_freq buffer, and the rotary cos/sin table is then built from bf16 positions and frequencies, so positions past 256 collapse and long-context attention is silently wrong
import torch
import torch.nn as nn
import torch.nn.functional as F


class RotaryEmbedding(nn.Module):
    def __init__(self, head_dim, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self._cached_len = 0
        self._cos = self._sin = None

    def _build(self, seq_len, device, dtype):
        t = torch.arange(seq_len, device=device, dtype=self.inv_freq.dtype)  # expect[rope]: any
        freqs = torch.outer(t, self.inv_freq)  # expect[rope]: any
        emb = torch.cat([freqs, freqs], dim=-1)
        self._cos, self._sin = emb.cos().to(dtype), emb.sin().to(dtype)
        self._cached_len = seq_len

    def forward(self, x):
        seq_len = x.size(-2)
        if seq_len > self._cached_len or self._cos.device != x.device or self._cos.dtype != x.dtype:
            self._build(max(seq_len, 512), x.device, x.dtype)
        return self._cos[:seq_len], self._sin[:seq_len]


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


class CausalSelfAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.proj = nn.Linear(dim, dim, bias=False)
        self.rotary = RotaryEmbedding(dim // heads)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        cos, sin = self.rotary(q)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(out.transpose(1, 2).reshape(b, n, d))


class TinyLM(nn.Module):
    def __init__(self, vocab=512, dim=128, heads=4, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList(
            nn.ModuleDict({"ln": nn.LayerNorm(dim), "attn": CausalSelfAttention(dim, heads)}) for _ in range(layers)
        )
        self.norm = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids):
        h = self.embed(ids)
        for blk in self.blocks:
            h = h + blk["attn"](blk["ln"](h))
        return self.lm_head(self.norm(h))


@torch.no_grad()
def long_context_nll(model, device, seq_len=1024, batches=2):
    g = torch.Generator().manual_seed(0)
    total = torch.zeros((), device=device)
    for _ in range(batches):
        ids = torch.randint(0, 512, (2, seq_len), generator=g).to(device)
        logits = model(ids[:, :-1])
        total += F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), ids[:, 1:].reshape(-1))
    return (total / batches).item()


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    torch.manual_seed(0)
    model = TinyLM().to(device=device, dtype=dtype).eval()
    print(f"long-context nll: {long_context_nll(model, device):.4f}")


if __name__ == "__main__":
    main()
