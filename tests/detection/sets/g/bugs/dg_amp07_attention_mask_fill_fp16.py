# source: https://github.com/pytorch/benchmark/pull/794
# area: AMP
# bug: the attention block fills padded positions with the constant -1e9, which does not fit in float16, so under CUDA fp16 autocast the half-precision scores make masked_fill raise "value cannot be converted to type at::Half without overflow"
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class ScaledDotAttention(nn.Module):
    def forward(self, query, key, value, mask=None):
        scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(query.size(-1))
        if mask is not None:
            scores = scores.masked_fill(mask == 0, -1e9)  # expect: any
        weights = F.softmax(scores, dim=-1)
        return torch.matmul(weights, value), weights


class MultiHeadedAttention(nn.Module):
    def __init__(self, d_model, heads):
        super().__init__()
        self.h, self.d_k = heads, d_model // heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.attn = ScaledDotAttention()

    def forward(self, x, mask):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.h, self.d_k).permute(2, 0, 3, 1, 4)
        ctx, _ = self.attn(q, k, v, mask)
        return self.out(ctx.transpose(1, 2).reshape(b, t, -1))


class EncoderBlock(nn.Module):
    def __init__(self, d_model, heads):
        super().__init__()
        self.attn = MultiHeadedAttention(d_model, heads)
        self.ff = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)

    def forward(self, x, mask):
        x = self.ln1(x + self.attn(x, mask))
        return self.ln2(x + self.ff(x))


class BertClassifier(nn.Module):
    def __init__(self, vocab=200, d_model=64, heads=4, layers=2, n_labels=3, pad_id=0):
        super().__init__()
        self.pad_id = pad_id
        self.tok = nn.Embedding(vocab, d_model, padding_idx=pad_id)
        self.pos = nn.Embedding(128, d_model)
        self.blocks = nn.ModuleList(EncoderBlock(d_model, heads) for _ in range(layers))
        self.cls = nn.Linear(d_model, n_labels)

    def forward(self, ids):
        mask = (ids != self.pad_id).unsqueeze(1).unsqueeze(1)
        pos = torch.arange(ids.size(1), device=ids.device)
        x = self.tok(ids) + self.pos(pos)
        for blk in self.blocks:
            x = blk(x, mask)
        return self.cls(x[:, 0])


@torch.no_grad()
def predict(model, batches, device):
    model.eval()
    preds = []
    for ids in batches:
        ids = ids.to(device)
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=device.type == "cuda"):
            logits = model(ids)
        preds.append(logits.argmax(dim=-1))
    return torch.cat(preds)


def padded_batches(n_batches=3, bs=6, max_len=20, vocab=200):
    g = torch.Generator().manual_seed(5)
    out = []
    for _ in range(n_batches):
        ids = torch.randint(1, vocab, (bs, max_len), generator=g)
        lengths = torch.randint(5, max_len + 1, (bs,), generator=g)
        ids[torch.arange(max_len).unsqueeze(0) >= lengths.unsqueeze(1)] = 0
        out.append(ids)
    return out


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = BertClassifier().to(device)
    print("predicted labels:", predict(model, padded_batches(), device).cpu().tolist())
