# twin of: bugs/dj_dtype02_padding_mask_fp32_min.py
# area: dtype
# correct: the fill value is the minimum of the scores' own dtype, so it is representable in fp16 as well as fp32
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class EncoderConfig:
    vocab_size = 1000
    hidden = 64
    heads = 4
    layers = 2
    max_len = 32
    pad_id = 0


def apply_padding_mask(scores, pad_mask, mask_value=None):
    if mask_value is None:
        mask_value = torch.finfo(scores.dtype).min
    return scores.masked_fill(pad_mask[:, None, None, :], mask_value)


class SelfAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.heads = cfg.heads
        self.head_dim = cfg.hidden // cfg.heads
        self.qkv = nn.Linear(cfg.hidden, 3 * cfg.hidden)
        self.out = nn.Linear(cfg.hidden, cfg.hidden)

    def forward(self, x, pad_mask):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, self.head_dim).unbind(2)
        q, k, v = (z.transpose(1, 2) for z in (q, k, v))
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        scores = apply_padding_mask(scores, pad_mask)
        ctx = F.softmax(scores, dim=-1) @ v
        return self.out(ctx.transpose(1, 2).reshape(b, t, -1))


class EncoderLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.attn = SelfAttention(cfg)
        self.norm1 = nn.LayerNorm(cfg.hidden)
        self.ff = nn.Sequential(nn.Linear(cfg.hidden, 4 * cfg.hidden), nn.GELU(),
                                nn.Linear(4 * cfg.hidden, cfg.hidden))
        self.norm2 = nn.LayerNorm(cfg.hidden)

    def forward(self, x, pad_mask):
        x = self.norm1(x + self.attn(x, pad_mask))
        return self.norm2(x + self.ff(x))


class TextEncoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.tok = nn.Embedding(cfg.vocab_size, cfg.hidden)
        self.pos = nn.Embedding(cfg.max_len, cfg.hidden)
        self.layers = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.layers))

    def forward(self, ids):
        pad_mask = ids == self.cfg.pad_id
        pos = torch.arange(ids.size(1), device=ids.device)
        x = self.tok(ids) + self.pos(pos)
        for layer in self.layers:
            x = layer(x, pad_mask)
        keep = (~pad_mask).unsqueeze(-1).to(x.dtype)
        return (x * keep).sum(1) / keep.sum(1).clamp(min=1)


def make_batch(cfg, n, device):
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(1, cfg.vocab_size, (n, cfg.max_len), generator=g)
    lengths = torch.randint(4, cfg.max_len, (n,), generator=g)
    ids[torch.arange(cfg.max_len)[None, :] >= lengths[:, None]] = cfg.pad_id
    return ids.to(device)


@torch.no_grad()
def embed_corpus():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.float16 if device.type == "cuda" else torch.float32
    cfg = EncoderConfig()
    torch.manual_seed(0)
    model = TextEncoder(cfg).to(device=device, dtype=dtype).eval()
    ids = make_batch(cfg, 16, device)
    emb = F.normalize(model(ids).float(), dim=-1)
    sim = emb @ emb.T
    print("embeddings", tuple(emb.shape), "mean off-diagonal sim", (sim.sum() - sim.trace()).item() / (16 * 15))


if __name__ == "__main__":
    embed_corpus()
