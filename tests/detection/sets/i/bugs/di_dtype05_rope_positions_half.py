# source: https://github.com/NVIDIA/Megatron-LM/issues/535
# area: dtype
# bug: rotary positions are created with type_as(inv_freq); after the model is cast to float16 on the GPU the buffer is half, so positions above 2048 lose integer precision and distant tokens share the same rotary phase
import torch
import torch.nn as nn
import torch.nn.functional as F


class LMConfig:
    vocab_size = 512
    dim = 64
    heads = 4
    layers = 2
    max_seq_len = 4096


class RotaryEmbedding(nn.Module):
    def __init__(self, head_dim, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2).float() / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, seq_len, offset=0):
        seq = torch.arange(seq_len, device=self.inv_freq.device) + offset
        seq = seq.type_as(self.inv_freq)  # expect: any
        freqs = torch.outer(seq, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos()[None, None], emb.sin()[None, None]


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary(x, cos, sin):
    return x * cos + rotate_half(x) * sin


class CausalBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.heads = cfg.heads
        self.norm1 = nn.LayerNorm(cfg.dim)
        self.qkv = nn.Linear(cfg.dim, 3 * cfg.dim, bias=False)
        self.proj = nn.Linear(cfg.dim, cfg.dim, bias=False)
        self.norm2 = nn.LayerNorm(cfg.dim)
        self.mlp = nn.Sequential(nn.Linear(cfg.dim, 4 * cfg.dim), nn.GELU(), nn.Linear(4 * cfg.dim, cfg.dim))

    def forward(self, x, cos, sin):
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(att.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.norm2(x))


class LongContextLM(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab_size, cfg.dim)
        self.rotary = RotaryEmbedding(cfg.dim // cfg.heads)
        self.blocks = nn.ModuleList(CausalBlock(cfg) for _ in range(cfg.layers))
        self.head = nn.Linear(cfg.dim, cfg.vocab_size, bias=False)

    def forward(self, ids):
        cos, sin = self.rotary(ids.shape[1])
        x = self.embed(ids)
        for blk in self.blocks:
            x = blk(x, cos.to(x.dtype), sin.to(x.dtype))
        return self.head(x)


@torch.no_grad()
def perplexity(model, ids):
    logits = model(ids[:, :-1])
    nll = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
    return torch.exp(nll).item()


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.float16 if device.type == "cuda" else torch.float32
    cfg = LMConfig()
    model = LongContextLM(cfg).to(device=device, dtype=dtype).eval()
    ids = torch.randint(0, cfg.vocab_size, (1, 3000), device=device)
    print(f"perplexity on a 3000-token document: {perplexity(model, ids):.2f}")


if __name__ == "__main__":
    main()
