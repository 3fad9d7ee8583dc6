# source: https://github.com/facebookresearch/mmf/pull/962
# area: dtype
# bug: masked_fill with -1e9 on fp16 attention scores overflows half range and raises once the model runs in half precision on the GPU
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class EvalConfig:
    vocab_size: int = 500
    dim: int = 64
    heads: int = 4
    num_classes: int = 5
    seq_len: int = 24
    batch_size: int = 16
    num_batches: int = 6


class MaskedSelfAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.qkv = nn.Linear(dim, dim * 3)
        self.out = nn.Linear(dim, dim)

    def forward(self, x, pad_mask):
        b, t, d = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = k.view(b, t, self.heads, self.head_dim).transpose(1, 2)
        v = v.view(b, t, self.heads, self.head_dim).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        scores = scores.masked_fill(pad_mask[:, None, None, :], -1e9)  # expect: any
        attn = scores.softmax(dim=-1)
        ctx = (attn @ v).transpose(1, 2).reshape(b, t, d)
        return self.out(ctx)


class DocClassifier(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab_size, cfg.dim, padding_idx=0)
        self.attn = MaskedSelfAttention(cfg.dim, cfg.heads)
        self.norm = nn.LayerNorm(cfg.dim)
        self.head = nn.Linear(cfg.dim, cfg.num_classes)

    def forward(self, tokens):
        pad_mask = tokens.eq(0)
        h = self.embed(tokens)
        h = self.norm(h + self.attn(h, pad_mask))
        keep = (~pad_mask).unsqueeze(-1).to(h.dtype)
        pooled = (h * keep).sum(1) / keep.sum(1).clamp(min=1)
        return self.head(pooled)


def make_batches(cfg, generator):
    for _ in range(cfg.num_batches):
        tokens = torch.randint(1, cfg.vocab_size, (cfg.batch_size, cfg.seq_len), generator=generator)
        lengths = torch.randint(4, cfg.seq_len + 1, (cfg.batch_size,), generator=generator)
        positions = torch.arange(cfg.seq_len).unsqueeze(0)
        tokens[positions >= lengths.unsqueeze(1)] = 0
        labels = torch.randint(0, cfg.num_classes, (cfg.batch_size,), generator=generator)
        yield tokens, labels


@torch.no_grad()
def evaluate(model, cfg, device):
    model.eval()
    correct = torch.zeros((), dtype=torch.long, device=device)
    total = 0
    gen = torch.Generator().manual_seed(0)
    for tokens, labels in make_batches(cfg, gen):
        tokens, labels = tokens.to(device), labels.to(device)
        logits = model(tokens)
        correct += (logits.argmax(-1) == labels).sum()
        total += labels.numel()
    return correct.item() / total


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_half = device.type == "cuda"
    torch.manual_seed(0)
    cfg = EvalConfig()
    model = DocClassifier(cfg).to(device)
    if use_half:
        model = model.half()
    acc = evaluate(model, cfg, device)
    print(f"eval accuracy: {acc:.3f} (half={use_half})")


if __name__ == "__main__":
    main()
