# source: https://github.com/EleutherAI/gpt-neox/issues/1003
# area: dtype
# bug: rotary table builds positions and inv_freq in the activation dtype; once the scorer runs in fp16 on GPU, positions above 2048 and the position*frequency products are rounded in fp16, so cos/sin (and long-context scores) are wrong
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
run_dtype = torch.float16 if device.type == "cuda" else torch.float32


class RotaryEmbedding(nn.Module):
    def __init__(self, dim, base=10000):
        super().__init__()
        self.dim, self.base = dim, base

    def cos_sin(self, x, seq_len):
        exponents = torch.arange(0, self.dim, 2, device=x.device, dtype=x.dtype) / self.dim  # expect[rope]: any
        inv_freq = 1.0 / (self.base ** exponents)
        t = torch.arange(seq_len, device=x.device, dtype=x.dtype)  # expect[rope]: any
        freqs = torch.outer(t, inv_freq)
        emb = torch.cat([freqs, freqs], dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


class RotaryAttention(nn.Module):
    def __init__(self, dim=32, heads=2):
        super().__init__()
        self.heads, self.hd = heads, dim // heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.rope = RotaryEmbedding(self.hd)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, self.hd).permute(2, 0, 3, 1, 4)
        cos, sin = self.rope.cos_sin(x, t)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(out.transpose(1, 2).reshape(b, t, d))


class TinyLM(nn.Module):
    def __init__(self, vocab=64, dim=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.attn = RotaryAttention(dim)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, ids):
        h = self.emb(ids)
        h = h + self.attn(self.norm(h))
        return self.head(h)


@torch.no_grad()
def perplexity(model, ids):
    logits = model(ids[:, :-1])
    nll = F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), ids[:, 1:].reshape(-1))
    return math.exp(nll.item())


model = TinyLM().to(device)
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
for step in range(20):
    ids = torch.randint(0, 64, (4, 65), device=device)
    loss = F.cross_entropy(model(ids[:, :-1]).reshape(-1, 64), ids[:, 1:].reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()

scorer = model.to(dtype=run_dtype).eval()
long_ids = torch.randint(0, 64, (1, 3000), device=device)
print("long-context ppl", round(perplexity(scorer, long_ids), 3))
