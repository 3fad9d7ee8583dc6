# source: https://github.com/huggingface/transformers/pull/17306
# area: dtype
# bug: the attention bias is filled with -1e9 in float32 and cast to the fp16 dtype used on CUDA, where it becomes -inf; left-padded rows are fully masked and softmax returns NaN
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def build_attention_bias(attention_mask, dtype):
    batch, length = attention_mask.shape
    causal = torch.ones(length, length, dtype=torch.bool, device=attention_mask.device).tril()
    allowed = causal.unsqueeze(0) & attention_mask.bool().unsqueeze(1)
    bias = torch.zeros(batch, length, length, device=attention_mask.device)
    bias = bias.masked_fill(~allowed, -1e9)  # expect[mask]: any
    return bias.unsqueeze(1).to(dtype)  # expect[mask]: any


class SelfAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x, bias):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-1, -2) / math.sqrt(d // self.heads) + bias
        attn = F.softmax(scores, dim=-1)
        return self.out((attn @ v).transpose(1, 2).reshape(b, t, d))


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = SelfAttention(dim, heads)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x, bias):
        x = x + self.attn(self.ln1(x), bias)
        return x + self.mlp(self.ln2(x))


class TinyDecoder(nn.Module):
    def __init__(self, vocab=300, dim=64, heads=4, layers=2, max_len=64):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_len, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids, attention_mask):
        positions = (attention_mask.cumsum(-1) - 1).clamp(min=0)
        x = self.tok(ids) + self.pos(positions)
        bias = build_attention_bias(attention_mask, x.dtype)
        for block in self.blocks:
            x = block(x, bias)
        return self.head(self.norm(x))


def left_pad(prompts, pad_id, device):
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    mask = torch.zeros(len(prompts), width, dtype=torch.long)
    for i, p in enumerate(prompts):
        ids[i, width - len(p):] = torch.tensor(p)
        mask[i, width - len(p):] = 1
    return ids.to(device), mask.to(device)


@torch.no_grad()
def greedy_generate(model, prompts, steps, pad_id, device):
    ids, mask = left_pad(prompts, pad_id, device)
    for _ in range(steps):
        logits = model(ids, mask)[:, -1]
        nxt = logits.float().argmax(-1, keepdim=True)
        ids = torch.cat([ids, nxt], dim=1)
        mask = torch.cat([mask, torch.ones_like(nxt)], dim=1)
    return ids.cpu()


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.float16 if device.type == "cuda" else torch.float32
    torch.manual_seed(0)
    model = TinyDecoder().to(device=device, dtype=dtype).eval()
    prompts = [[5, 17, 42, 8, 99, 3], [12, 7], [250, 251, 252]]
    out = greedy_generate(model, prompts, steps=6, pad_id=0, device=device)
    for row in out.tolist():
        print(row)


if __name__ == "__main__":
    main()
