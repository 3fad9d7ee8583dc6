# twin of: bugs/dp_dtype05_rope_phase_bf16.py
# area: dtype
# correct: the rotary phases are built from float32 positions and float32 inverse frequencies; only the final cos/sin tables are cast to the activation dtype
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
AMP_ENABLED = device.type == "cuda"


class RotaryTransform(nn.Module):
    def __init__(self, head_dim, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def cos_sin(self, x):
        seq_len = x.shape[-2]
        t = torch.arange(seq_len, device=x.device, dtype=torch.float32)
        freqs = torch.outer(t, self.inv_freq.to(torch.float32))
        emb = torch.cat([freqs, freqs], dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)

    @staticmethod
    def rotate_half(x):
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat([-x2, x1], dim=-1)

    def forward(self, q, k):
        cos, sin = self.cos_sin(q)
        return q * cos + self.rotate_half(q) * sin, k * cos + self.rotate_half(k) * sin


class CausalSelfAttention(nn.Module):
    def __init__(self, dim, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.proj = nn.Linear(dim, dim, bias=False)
        self.rotary = RotaryTransform(dim // n_heads)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.n_heads, d // self.n_heads).permute(2, 0, 3, 1, 4)
        q, k = self.rotary(q, k)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, s, d))


class TinyGPT(nn.Module):
    def __init__(self, vocab=256, dim=64, n_heads=4, n_layers=2):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList(CausalSelfAttention(dim, n_heads) for _ in range(n_layers))
        self.norms = nn.ModuleList(nn.LayerNorm(dim) for _ in range(n_layers))
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, idx):
        x = self.tok(idx)
        for norm, block in zip(self.norms, self.blocks):
            x = x + block(norm(x))
        return self.head(x)


def train(steps=3, seq_len=768):
    torch.manual_seed(0)
    model = TinyGPT().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    losses = []
    for _ in range(steps):
        batch = torch.randint(0, 256, (1, seq_len + 1), device=device)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=AMP_ENABLED):
            logits = model(batch[:, :-1])
            loss = F.cross_entropy(logits.float().flatten(0, 1), batch[:, 1:].flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    print("final loss:", torch.stack(losses)[-1].item(), "ln(vocab)=", round(math.log(256), 3))


if __name__ == "__main__":
    train()
