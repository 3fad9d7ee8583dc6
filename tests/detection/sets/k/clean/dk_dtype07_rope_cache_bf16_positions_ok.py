# twin of: bugs/dk_dtype07_rope_cache_bf16_positions.py
# area: dtype
# correct: inv_freq, positions and angles are built in float32 regardless of the model dtype; only the final cos/sin tables are cast to the activation dtype
import torch
import torch.nn as nn
import torch.nn.functional as F


class RotaryEmbedding(nn.Module):
    def __init__(self, dim, base=10000.0):
        super().__init__()
        self.dim, self.base = dim, base

    def forward(self, x, seq_len):
        inv_freq = 1.0 / (self.base ** (torch.arange(0, self.dim, 2, device=x.device, dtype=torch.float32) / self.dim))
        t = torch.arange(seq_len, device=x.device, dtype=torch.float32)
        freqs = torch.outer(t, inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary(q, k, cos, sin):
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.hd = heads, dim // heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.o = nn.Linear(dim, dim, bias=False)
        self.rotary = RotaryEmbedding(self.hd)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, self.hd).permute(2, 0, 3, 1, 4)
        cos, sin = self.rotary(x, t)
        q, k = apply_rotary(q, k, cos, sin)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o(y.transpose(1, 2).reshape(b, t, d))


class TinyLM(nn.Module):
    def __init__(self, vocab=512, dim=64, heads=4, layers=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(Attention(dim, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids):
        x = self.emb(ids)
        for layer in self.layers:
            x = x + layer(x)
        return self.lm_head(self.norm(x))


@torch.no_grad()
def evaluate_perplexity(model, device, num_docs=4, seq_len=1024):
    gen = torch.Generator().manual_seed(0)
    total_nll = torch.zeros((), device=device)
    total_tokens = 0
    for _ in range(num_docs):
        ids = torch.randint(0, 512, (1, seq_len + 1), generator=gen).to(device)
        logits = model(ids[:, :-1]).float()
        total_nll += F.cross_entropy(logits.reshape(-1, logits.size(-1)), ids[:, 1:].reshape(-1), reduction="sum")
        total_tokens += seq_len
    return torch.exp(total_nll / total_tokens).item()


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    torch.manual_seed(0)
    model = TinyLM().to(device=device, dtype=dtype).eval()
    print(f"long-context perplexity: {evaluate_perplexity(model, device):.2f}")


if __name__ == "__main__":
    main()
