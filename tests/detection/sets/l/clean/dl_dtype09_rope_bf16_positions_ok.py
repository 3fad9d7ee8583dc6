# twin of: bugs/dl_dtype09_rope_bf16_positions.py
# area: dtype
# correct: inverse frequencies and positions are built in float32 inside forward, so casting the model to bfloat16 cannot degrade the rotary phases; only cos/sin are cast to the activation dtype
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class ModelArgs:
    vocab: int = 256
    dim: int = 64
    n_heads: int = 4
    n_layers: int = 2
    rope_base: float = 10000.0


class RotaryEmbedding(nn.Module):
    def __init__(self, head_dim, base):
        super().__init__()
        self.head_dim = head_dim
        self.base = base

    def forward(self, x, seq_len):
        exponent = torch.arange(0, self.head_dim, 2, device=x.device, dtype=torch.float32) / self.head_dim
        inv_freq = 1.0 / (self.base ** exponent)
        t = torch.arange(seq_len, device=x.device, dtype=torch.float32)
        freqs = torch.outer(t, inv_freq)
        emb = torch.cat([freqs, freqs], dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


class Attention(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.h = args.n_heads
        self.qkv = nn.Linear(args.dim, 3 * args.dim, bias=False)
        self.o = nn.Linear(args.dim, args.dim, bias=False)
        self.rope = RotaryEmbedding(args.dim // args.n_heads, args.rope_base)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = (z.view(b, t, self.h, -1).transpose(1, 2) for z in self.qkv(x).chunk(3, dim=-1))
        cos, sin = self.rope(x, t)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o(y.transpose(1, 2).reshape(b, t, d))


class Decoder(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.emb = nn.Embedding(args.vocab, args.dim)
        self.layers = nn.ModuleList(
            nn.ModuleDict({"n1": nn.RMSNorm(args.dim), "attn": Attention(args),
                           "n2": nn.RMSNorm(args.dim),
                           "ff": nn.Sequential(nn.Linear(args.dim, 4 * args.dim), nn.SiLU(),
                                               nn.Linear(4 * args.dim, args.dim))})
            for _ in range(args.n_layers))
        self.norm = nn.RMSNorm(args.dim)
        self.out = nn.Linear(args.dim, args.vocab, bias=False)

    def forward(self, ids):
        x = self.emb(ids)
        for layer in self.layers:
            x = x + layer["attn"](layer["n1"](x))
            x = x + layer["ff"](layer["n2"](x))
        return self.out(self.norm(x))


@torch.no_grad()
def evaluate_long_context(model, device, seq_len=1024, batches=2):
    model.eval()
    g = torch.Generator(device="cpu").manual_seed(0)
    data = torch.randint(0, 256, (batches, 2, seq_len + 1), generator=g).to(device)
    total = torch.zeros((), device=device)
    for ids in data:
        logits = model(ids[:, :-1])
        total += F.cross_entropy(logits.float().flatten(0, 1), ids[:, 1:].flatten())
    return math.exp((total / batches).item())


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.bfloat16 if device.type == "cuda" and torch.cuda.is_bf16_supported() else torch.float32
    model = Decoder(ModelArgs()).to(device=device, dtype=dtype)
    print(f"perplexity at 1024 tokens ({dtype}): {evaluate_long_context(model, device):.2f}")


if __name__ == "__main__":
    main()
