# twin of: bugs/dh_dtype01_gau_mask_fp16.py
# area: dtype
# correct: the mask value is taken from torch.finfo of the score dtype, so it is representable in float16 as well as float32
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class GAUConfig:
    vocab_size: int = 3000
    hidden: int = 128
    expansion: int = 2
    key_dim: int = 64
    layers: int = 2
    num_labels: int = 4
    max_len: int = 64


class ScaleOffset(nn.Module):
    def __init__(self, dim, heads=2):
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(heads, dim) * 0.02)
        self.beta = nn.Parameter(torch.zeros(heads, dim))

    def forward(self, x):
        out = x.unsqueeze(-2) * self.gamma + self.beta
        return out.unbind(dim=-2)


class GatedAttentionUnit(nn.Module):
    def __init__(self, cfg: GAUConfig):
        super().__init__()
        inner = cfg.hidden * cfg.expansion
        self.to_uv = nn.Linear(cfg.hidden, 2 * inner)
        self.to_z = nn.Linear(cfg.hidden, cfg.key_dim)
        self.qk = ScaleOffset(cfg.key_dim)
        self.out = nn.Linear(inner, cfg.hidden)
        self.norm = nn.LayerNorm(cfg.hidden)
        self.key_dim = cfg.key_dim

    def forward(self, x, mask):
        residual = x
        x = self.norm(x)
        u, v = F.silu(self.to_uv(x)).chunk(2, dim=-1)
        q, k = self.qk(F.silu(self.to_z(x)))
        attn = torch.einsum("bnd,bmd->bnm", q, k) / math.sqrt(self.key_dim)
        attn = attn.masked_fill(~mask[:, None, :], torch.finfo(attn.dtype).min)
        attn = torch.softmax(attn, dim=-1)
        return residual + self.out(u * torch.einsum("bnm,bme->bne", attn, v))


class GAUClassifier(nn.Module):
    def __init__(self, cfg: GAUConfig):
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab_size, cfg.hidden, padding_idx=0)
        self.pos = nn.Embedding(cfg.max_len, cfg.hidden)
        self.blocks = nn.ModuleList(GatedAttentionUnit(cfg) for _ in range(cfg.layers))
        self.head = nn.Linear(cfg.hidden, cfg.num_labels)

    def forward(self, input_ids):
        mask = input_ids != 0
        pos = torch.arange(input_ids.size(1), device=input_ids.device)
        h = self.embed(input_ids) + self.pos(pos)[None]
        for blk in self.blocks:
            h = blk(h, mask)
        denom = mask.sum(1, keepdim=True).clamp(min=1).to(h.dtype)
        pooled = (h * mask[..., None].to(h.dtype)).sum(1) / denom
        return self.head(pooled)


def make_batch(cfg, batch_size, generator):
    lengths = torch.randint(8, cfg.max_len, (batch_size,), generator=generator)
    ids = torch.randint(1, cfg.vocab_size, (batch_size, cfg.max_len), generator=generator)
    ids[torch.arange(cfg.max_len)[None, :] >= lengths[:, None]] = 0
    return ids


@torch.no_grad()
def predict(model, cfg, device, n_batches=4):
    g = torch.Generator().manual_seed(0)
    preds = []
    for _ in range(n_batches):
        ids = make_batch(cfg, 16, g).to(device)
        preds.append(model(ids).argmax(-1).cpu())
    return torch.cat(preds)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    half = device.type == "cuda"
    cfg = GAUConfig()
    model = GAUClassifier(cfg).to(device).eval()
    if half:
        model = model.half()
    preds = predict(model, cfg, device)
    print("label histogram:", torch.bincount(preds, minlength=cfg.num_labels).tolist())


if __name__ == "__main__":
    main()
