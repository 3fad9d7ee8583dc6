# twin of: bugs/cb_dtype01_attn_mask_fill_fp16.py
# area: dtype
# correct: the padding fill value is torch.finfo(scores.dtype).min, which is representable in whatever dtype the scores have (fp16 on the GPU, fp32 on the CPU)
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
# half precision for faster inference on the GPU, full precision on the CPU
infer_dtype = torch.float16 if device.type == "cuda" else torch.float32

VOCAB, D_MODEL, N_HEADS, N_CLASSES, PAD = 50, 32, 4, 3, 0


def masked_attention(q, k, v, key_padding_mask):
    # q, k, v: (B, H, T, Dh); key_padding_mask: (B, T) True where token is padding
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    scores = scores.masked_fill(key_padding_mask[:, None, None, :], torch.finfo(scores.dtype).min)
    attn = F.softmax(scores, dim=-1)
    return attn @ v


class EncoderLayer(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.ff = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))
        self.norm2 = nn.LayerNorm(d_model)

    def forward(self, x, pad_mask):
        B, T, C = x.shape
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        split = lambda t: t.view(B, T, self.n_heads, C // self.n_heads).transpose(1, 2)
        h = masked_attention(split(q), split(k), split(v), pad_mask)
        x = x + self.proj(h.transpose(1, 2).reshape(B, T, C))
        return x + self.ff(self.norm2(x))


class TextClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D_MODEL, padding_idx=PAD)
        self.layers = nn.ModuleList([EncoderLayer(D_MODEL, N_HEADS) for _ in range(2)])
        self.head = nn.Linear(D_MODEL, N_CLASSES)

    def forward(self, ids):
        pad_mask = ids.eq(PAD)
        x = self.emb(ids)
        for layer in self.layers:
            x = layer(x, pad_mask)
        keep = (~pad_mask).unsqueeze(-1).to(x.dtype)
        pooled = (x * keep).sum(1) / keep.sum(1).clamp(min=1)
        return self.head(pooled)


def make_batch(n=8, t=12):
    ids = torch.randint(1, VOCAB, (n, t))
    lengths = torch.randint(4, t + 1, (n,))
    ids[torch.arange(t)[None, :] >= lengths[:, None]] = PAD
    return ids


@torch.no_grad()
def predict(model, batches):
    model.eval()
    preds = []
    for ids in batches:
        logits = model(ids.to(device))
        preds.append(logits.float().argmax(-1).cpu())
    return torch.cat(preds)


if __name__ == "__main__":
    model = TextClassifier().to(device=device, dtype=infer_dtype)
    batches = [make_batch() for _ in range(3)]
    preds = predict(model, batches)
    print("predicted classes:", preds.tolist())
