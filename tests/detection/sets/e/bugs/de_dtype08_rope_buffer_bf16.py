# source: https://github.com/EleutherAI/gpt-neox/pull/1016
# area: dtype
# bug: the rotary table's position and frequency buffers are float32 buffers, so model.to(dtype=bfloat16) on the GPU converts them and positions such as 257 collapse to 256, corrupting long-context rotary angles
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
dtype = torch.bfloat16 if device.type == "cuda" else torch.float32


class RotaryEmbedding(nn.Module):
    def __init__(self, head_dim, max_seq_len=1024, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.register_buffer("positions", torch.arange(max_seq_len, dtype=torch.float32), persistent=False)

    def forward(self, seq_len):
        freqs = torch.outer(self.positions[:seq_len], self.inv_freq)  # expect[buf]: any
        emb = torch.cat([freqs, freqs], dim=-1)
        return emb.cos(), emb.sin()


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


class Attention(nn.Module):
    def __init__(self, dim=64, heads=4, max_seq_len=1024):
        super().__init__()
        self.heads, self.hd = heads, dim // heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.o = nn.Linear(dim, dim, bias=False)
        self.rotary = RotaryEmbedding(self.hd, max_seq_len)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, self.hd).permute(2, 0, 3, 1, 4)
        cos, sin = self.rotary(t)
        cos, sin = cos.to(q.dtype), sin.to(q.dtype)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o(out.transpose(1, 2).reshape(b, t, d))


class TinyLM(nn.Module):
    def __init__(self, vocab=256, dim=64, layers=2, max_seq_len=1024):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList([Attention(dim, max_seq_len=max_seq_len) for _ in range(layers)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids):
        x = self.emb(ids)
        for blk in self.blocks:
            x = x + blk(x)
        return self.head(self.norm(x))


def main():
    torch.manual_seed(0)
    model = TinyLM().to(device=device, dtype=dtype)  # expect[buf]: any
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    seq_len = 512
    for step in range(3):
        ids = torch.randint(0, 256, (2, seq_len + 1), device=device)
        logits = model(ids[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), ids[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    print("loss", round(loss.item(), 4))


if __name__ == "__main__":
    main()
