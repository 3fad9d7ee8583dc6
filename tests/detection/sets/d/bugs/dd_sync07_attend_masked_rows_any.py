# source: https://github.com/lucidrains/x-transformers/pull/355
# area: transfer & sync
# bug: the attention forward uses a CUDA tensor's .any() as a Python bool, forcing a device->host sync in every layer of every step
import torch
import torch.nn as nn
import torch.nn.functional as F


class Attend(nn.Module):
    def __init__(self, dropout=0.0, causal=False):
        super().__init__()
        self.causal = causal
        self.dropout = nn.Dropout(dropout)

    def forward(self, q, k, v, mask=None):
        scale = q.shape[-1] ** -0.5
        sim = torch.einsum("bhid,bhjd->bhij", q, k) * scale
        i, j = sim.shape[-2:]
        keep = None
        if mask is not None:
            keep = mask[:, None, None, :]
        if self.causal:
            causal_keep = torch.ones((i, j), dtype=torch.bool, device=q.device).tril(j - i)
            keep = causal_keep if keep is None else keep & causal_keep
        row_is_entirely_masked = None
        if keep is not None:
            sim = sim.masked_fill(~keep, torch.finfo(sim.dtype).min)
            row_is_entirely_masked = ~keep.any(dim=-1, keepdim=True)
        attn = self.dropout(sim.softmax(dim=-1))
        out = torch.einsum("bhij,bhjd->bhid", attn, v)
        if row_is_entirely_masked is not None and row_is_entirely_masked.any():  # expect: any
            out = out.masked_fill(row_is_entirely_masked, 0.0)
        return out


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)
        self.to_out = nn.Linear(dim, dim)
        self.attend = Attend(dropout=0.1, causal=True)
        self.norm2 = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, dim * 4), nn.GELU(), nn.Linear(dim * 4, dim))

    def forward(self, x, mask):
        b, n, d = x.shape
        q, k, v = self.to_qkv(self.norm1(x)).chunk(3, dim=-1)
        q, k, v = (t.view(b, n, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        out = self.attend(q, k, v, mask=mask).transpose(1, 2).reshape(b, n, d)
        x = x + self.to_out(out)
        return x + self.ff(self.norm2(x))


class TransformerLM(nn.Module):
    def __init__(self, vocab=256, dim=64, depth=3, heads=4, max_len=64):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_len, dim)
        self.blocks = nn.ModuleList([Block(dim, heads) for _ in range(depth)])
        self.to_logits = nn.Linear(dim, vocab)

    def forward(self, tokens, mask):
        pos = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.tok(tokens) + self.pos(pos)
        for block in self.blocks:
            x = block(x, mask)
        return self.to_logits(x)


def train(steps=12, batch=8, seq_len=32):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    model = TransformerLM(max_len=seq_len).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    corpus = torch.randint(1, 256, (64, seq_len + 1), device=device)
    lengths = torch.randint(seq_len // 2, seq_len + 1, (64,), device=device)
    total = torch.zeros((), device=device)
    for step in range(steps):
        idx = torch.randint(0, 64, (batch,), device=device)
        seq, lens = corpus[idx], lengths[idx]
        inp, target = seq[:, :-1], seq[:, 1:]
        mask = torch.arange(seq_len, device=device)[None, :] < lens[:, None]
        logits = model(inp, mask)
        target = target.masked_fill(~mask, -100)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1), ignore_index=-100)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        total += loss.detach()
    print(f"mean loss over {steps} steps: {(total / steps).item():.4f}")


if __name__ == "__main__":
    train()
