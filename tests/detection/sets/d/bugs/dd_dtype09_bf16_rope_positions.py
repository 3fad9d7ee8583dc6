# source: https://github.com/huggingface/transformers/issues/25681
# area: dtype
# bug: after model.to(bfloat16) on the GPU the inv_freq buffer is bf16 and the position ids are built in that dtype, so positions above 256 collapse onto each other and the rotary cache is wrong
import torch
import torch.nn as nn
import torch.nn.functional as F


class RotaryEmbedding(nn.Module):
    def __init__(self, head_dim, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2).float() / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, seq_len, device):
        t = torch.arange(seq_len, device=device, dtype=self.inv_freq.dtype)  # expect: any
        freqs = torch.outer(t, self.inv_freq)
        emb = torch.cat([freqs, freqs], dim=-1)
        return emb.cos(), emb.sin()


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


class RotaryAttention(nn.Module):
    def __init__(self, dim=128, heads=4):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.o = nn.Linear(dim, dim, bias=False)
        self.rotary = RotaryEmbedding(self.head_dim)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        cos, sin = self.rotary(t, x.device)
        cos, sin = cos.to(x.dtype), sin.to(x.dtype)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o(out.transpose(1, 2).reshape(b, t, d))


class TinyLM(nn.Module):
    def __init__(self, vocab=512, dim=128, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList(RotaryAttention(dim) for _ in range(layers))
        self.norms = nn.ModuleList(nn.RMSNorm(dim) for _ in range(layers))
        self.lm_head = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids):
        h = self.embed(ids)
        for norm, block in zip(self.norms, self.blocks):
            h = h + block(norm(h))
        return self.lm_head(h)


@torch.no_grad()
def long_context_loss(model, ids):
    logits = model(ids[:, :-1])
    return F.cross_entropy(logits.float().flatten(0, 1), ids[:, 1:].flatten())


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    model = TinyLM().to(device=device, dtype=dtype).eval()
    ids = torch.randint(0, 512, (2, 1025), device=device)
    loss = long_context_loss(model, ids)
    cos, _ = model.blocks[0].rotary(1024, device)
    dup = (cos[1:] == cos[:-1]).all(dim=-1).sum()
    print(f"loss {loss.item():.4f}, duplicated rotary rows: {dup.item()}")


if __name__ == "__main__":
    main()
