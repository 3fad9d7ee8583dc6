# twin of: bugs/de_dtype02_seq2seq_mask_fp16.py
# area: dtype
# correct: the mask fill value is the most negative finite number of the score dtype, so it fits float16 and float32 alike
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
USE_HALF = device.type == "cuda"


class ScaledDotProductAttention(nn.Module):
    def __init__(self, head_dim, dropout=0.1):
        super().__init__()
        self.scale = head_dim ** 0.5
        self.dropout = nn.Dropout(dropout)

    def forward(self, q, k, v, mask=None):
        energy = torch.matmul(q, k.transpose(-2, -1)) / self.scale
        if mask is not None:
            energy = energy.masked_fill(mask == 0, torch.finfo(energy.dtype).min)
        attn = self.dropout(F.softmax(energy, dim=-1))
        return torch.matmul(attn, v), attn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.n_heads = n_heads
        self.head_dim = d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.core = ScaledDotProductAttention(self.head_dim)

    def forward(self, x, mask):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        ctx, _ = self.core(q, k, v, mask)
        return self.out(ctx.transpose(1, 2).reshape(b, t, d))


class Encoder(nn.Module):
    def __init__(self, vocab=100, d_model=64, pad_idx=0):
        super().__init__()
        self.pad_idx = pad_idx
        self.embed = nn.Embedding(vocab, d_model, padding_idx=pad_idx)
        self.attn = MultiHeadAttention(d_model)
        self.norm = nn.LayerNorm(d_model)
        self.cls = nn.Linear(d_model, 5)

    def make_src_mask(self, src):
        return (src != self.pad_idx).unsqueeze(1).unsqueeze(2)

    def forward(self, src):
        mask = self.make_src_mask(src)
        x = self.embed(src)
        x = self.norm(x + self.attn(x, mask))
        return self.cls(x[:, 0])


def make_batch(batch=16, seq=20, vocab=100):
    src = torch.randint(1, vocab, (batch, seq))
    lengths = torch.randint(5, seq + 1, (batch,))
    src[torch.arange(seq).unsqueeze(0) >= lengths.unsqueeze(1)] = 0
    return src, torch.randint(0, 5, (batch,))


def main():
    model = Encoder().to(device)
    if USE_HALF:
        model = model.half()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(10):
        src, tgt = make_batch()
        src, tgt = src.to(device), tgt.to(device)
        logits = model(src)
        loss = F.cross_entropy(logits.float(), tgt)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print("final loss", loss.item())


if __name__ == "__main__":
    main()
