# source: https://github.com/TransformerLensOrg/TransformerLens/pull/1260
# area: dtype
# bug: the KV cache is allocated with the default dtype (float32) while the model runs in float16 on the GPU; torch.cat promotes the keys to float32 and q @ k fails with "expected scalar type Half but found Float"
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class GenConfig:
    vocab_size: int = 256
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    max_new_tokens: int = 12


class KVCacheEntry:
    def __init__(self, batch, n_heads, head_dim, device):
        self.keys = torch.zeros(batch, n_heads, 0, head_dim, device=device)  # expect[w]: any
        self.values = torch.zeros(batch, n_heads, 0, head_dim, device=device)  # expect[w]: any

    def append(self, k, v):
        self.keys = torch.cat([self.keys, k], dim=2)
        self.values = torch.cat([self.values, v], dim=2)
        return self.keys, self.values


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.n_heads = cfg.n_heads
        self.head_dim = cfg.d_model // cfg.n_heads
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.out = nn.Linear(cfg.d_model, cfg.d_model)

    def forward(self, x, cache):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        k, v = cache.append(k, v)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        if t > 1:
            causal = torch.ones(t, k.shape[2], dtype=torch.bool, device=x.device).triu(k.shape[2] - t + 1)
            scores = scores.masked_fill(causal, float("-inf"))
        out = F.softmax(scores, dim=-1) @ v
        return self.out(out.transpose(1, 2).reshape(b, t, d))


class TinyDecoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.attn = nn.ModuleList(Attention(cfg) for _ in range(cfg.n_layers))
        self.norms = nn.ModuleList(nn.LayerNorm(cfg.d_model) for _ in range(cfg.n_layers))
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size)

    def init_cache(self, batch, device):
        head_dim = self.cfg.d_model // self.cfg.n_heads
        return [KVCacheEntry(batch, self.cfg.n_heads, head_dim, device) for _ in range(self.cfg.n_layers)]

    def forward(self, ids, caches):
        x = self.embed(ids)
        for attn, norm, cache in zip(self.attn, self.norms, caches):
            x = x + attn(norm(x), cache)
        return self.lm_head(x)


@torch.no_grad()
def generate(model, prompt, max_new_tokens):
    caches = model.init_cache(prompt.shape[0], prompt.device)
    logits = model(prompt, caches)
    tokens = [prompt]
    for _ in range(max_new_tokens):
        nxt = logits[:, -1].float().argmax(-1, keepdim=True)
        tokens.append(nxt)
        logits = model(nxt, caches)
    return torch.cat(tokens, dim=1)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.float16 if device.type == "cuda" else torch.float32
    cfg = GenConfig()
    model = TinyDecoder(cfg).to(device=device, dtype=dtype).eval()
    prompt = torch.randint(0, cfg.vocab_size, (2, 7), device=device)
    out = generate(model, prompt, cfg.max_new_tokens)
    print("generated shape", tuple(out.shape))
    print(out[0].tolist())


if __name__ == "__main__":
    main()
