# source: https://github.com/lucidrains/x-transformers/issues/265
# area: AMP
# bug: the rotary embedding disables autocast through the deprecated torch.cuda.amp.autocast decorator, which emits a FutureWarning on every GPU run and is slated for removal
import torch
import torch.nn as nn
import torch.nn.functional as F


class RotaryEmbedding(nn.Module):
    def __init__(self, dim, base=10000):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    @torch.cuda.amp.autocast(enabled=False)  # expect: any
    def forward(self, seq_len, device):
        t = torch.arange(seq_len, device=device, dtype=self.inv_freq.dtype)
        freqs = torch.einsum("i,j->ij", t, self.inv_freq)
        return torch.cat((freqs, freqs), dim=-1)


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary(t, freqs):
    freqs = freqs[None, None, :, :].to(t.dtype)
    return t * freqs.cos() + rotate_half(t) * freqs.sin()


class Attention(nn.Module):
    def __init__(self, dim, heads=4):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, dim * 3, bias=False)
        self.out = nn.Linear(dim, dim)
        self.rotary = RotaryEmbedding(dim // heads)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (t.view(b, n, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        freqs = self.rotary(n, x.device)
        q, k = apply_rotary(q, freqs), apply_rotary(k, freqs)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, n, d))


class TransformerLM(nn.Module):
    def __init__(self, vocab=128, dim=64, depth=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(
            nn.ModuleList([nn.LayerNorm(dim), Attention(dim), nn.LayerNorm(dim),
                           nn.Sequential(nn.Linear(dim, dim * 4), nn.GELU(), nn.Linear(dim * 4, dim))])
            for _ in range(depth)
        )
        self.head = nn.Linear(dim, vocab)

    def forward(self, ids):
        x = self.emb(ids)
        for ln1, attn, ln2, ff in self.layers:
            x = x + attn(ln1(x))
            x = x + ff(ln2(x))
        return self.head(x)


def train(steps=8, batch=8, seq=32):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = device.type == "cuda"
    model = TransformerLM().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    data = torch.randint(0, 128, (steps * batch, seq + 1))
    running = torch.zeros((), device=device)
    for i in range(steps):
        chunk = data[i * batch:(i + 1) * batch].to(device)
        inp, tgt = chunk[:, :-1], chunk[:, 1:]
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
            logits = model(inp)
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt.reshape(-1))
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
        running += loss.detach()
    return (running / steps).item()


if __name__ == "__main__":
    torch.manual_seed(0)
    print("mean train loss:", round(train(), 4))
