# twin of: bugs/cd_dtype02_attn_mask_fill_fp16.py
# area: dtype
# correct: the mask fill value is taken from torch.finfo of the scores dtype, so it is representable in float16 under autocast
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class MaskedSelfAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, pad_mask):
        b, n, d = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        scores = scores.masked_fill(pad_mask[:, None, None, :], torch.finfo(scores.dtype).min)
        attn = scores.softmax(dim=-1)
        out = (attn @ v).transpose(1, 2).reshape(b, n, d)
        return self.proj(out)


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = MaskedSelfAttention(dim, heads)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x, pad_mask):
        x = x + self.attn(self.ln1(x), pad_mask)
        return x + self.mlp(self.ln2(x))


class TextClassifier(nn.Module):
    def __init__(self, vocab, dim=64, heads=4, depth=2, classes=3, max_len=32):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim, padding_idx=0)
        self.pos = nn.Parameter(torch.zeros(1, max_len, dim))
        self.blocks = nn.ModuleList([Block(dim, heads) for _ in range(depth)])
        self.head = nn.Linear(dim, classes)

    def forward(self, ids):
        pad_mask = ids == 0
        x = self.tok(ids) + self.pos[:, : ids.size(1)]
        for blk in self.blocks:
            x = blk(x, pad_mask)
        keep = (~pad_mask).unsqueeze(-1).to(x.dtype)
        pooled = (x * keep).sum(1) / keep.sum(1).clamp(min=1.0)
        return self.head(pooled)


def make_batch(batch, max_len, vocab, gen):
    lengths = torch.randint(4, max_len + 1, (batch,), generator=gen)
    ids = torch.randint(1, vocab, (batch, max_len), generator=gen)
    ids[torch.arange(max_len)[None, :] >= lengths[:, None]] = 0
    labels = ids[:, 0] % 3
    return ids, labels


def train(steps=60, batch=32, vocab=200, max_len=32):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = device.type == "cuda"
    model = TextClassifier(vocab, max_len=max_len).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    gen = torch.Generator().manual_seed(0)
    running = torch.zeros((), device=device)
    for step in range(steps):
        ids, labels = make_batch(batch, max_len, vocab, gen)
        ids, labels = ids.to(device), labels.to(device)
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
            loss = F.cross_entropy(model(ids), labels)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        running += loss.detach()
    print(f"mean loss over {steps} steps: {(running / steps).item():.4f}")


if __name__ == "__main__":
    train()
