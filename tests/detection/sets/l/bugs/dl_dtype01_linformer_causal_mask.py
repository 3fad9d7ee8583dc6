# source: https://github.com/tatp22/linformer-pytorch/pull/19
# area: dtype
# bug: the causal mask fills scores with -1e10, which cannot be represented once the model runs in float16 on the GPU (masked_fill raises an overflow error)
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class LMConfig:
    vocab_size: int = 512
    dim: int = 64
    heads: int = 4
    depth: int = 2
    max_len: int = 64
    use_fp16_on_gpu: bool = True


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: LMConfig):
        super().__init__()
        self.heads = cfg.heads
        self.qkv = nn.Linear(cfg.dim, 3 * cfg.dim)
        self.out = nn.Linear(cfg.dim, cfg.dim)
        mask = torch.triu(torch.ones(cfg.max_len, cfg.max_len, dtype=torch.bool), diagonal=1)
        self.register_buffer("causal", mask, persistent=False)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // self.heads)
        scores = scores.masked_fill(self.causal[:t, :t], -1e10)  # expect: any
        attn = F.softmax(scores, dim=-1)
        y = (attn @ v).transpose(1, 2).reshape(b, t, d)
        return self.out(y)


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.dim)
        self.attn = CausalSelfAttention(cfg)
        self.ln2 = nn.LayerNorm(cfg.dim)
        self.mlp = nn.Sequential(nn.Linear(cfg.dim, 4 * cfg.dim), nn.GELU(), nn.Linear(4 * cfg.dim, cfg.dim))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class TinyLM(nn.Module):
    def __init__(self, cfg: LMConfig):
        super().__init__()
        self.cfg = cfg
        self.tok = nn.Embedding(cfg.vocab_size, cfg.dim)
        self.pos = nn.Embedding(cfg.max_len, cfg.dim)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.depth))
        self.ln_f = nn.LayerNorm(cfg.dim)
        self.head = nn.Linear(cfg.dim, cfg.vocab_size, bias=False)

    def forward(self, idx):
        t = idx.shape[1]
        pos = torch.arange(t, device=idx.device)
        x = self.tok(idx) + self.pos(pos)
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln_f(x))


@torch.no_grad()
def generate(model, prompt, steps):
    idx = prompt
    for _ in range(steps):
        window = idx[:, -model.cfg.max_len:]
        logits = model(window)[:, -1, :].float()
        nxt = torch.argmax(logits, dim=-1, keepdim=True)
        idx = torch.cat([idx, nxt], dim=1)
    return idx


def load_for_inference(cfg, device):
    torch.manual_seed(0)
    model = TinyLM(cfg).eval()
    if cfg.use_fp16_on_gpu and device.type == "cuda":
        model = model.half()
    return model.to(device)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cfg = LMConfig()
    model = load_for_inference(cfg, device)
    prompts = torch.randint(0, cfg.vocab_size, (4, 8), device=device)
    out = generate(model, prompts, steps=16)
    print("generated shape:", tuple(out.shape))
    print("first sequence:", out[0].tolist())


if __name__ == "__main__":
    main()
