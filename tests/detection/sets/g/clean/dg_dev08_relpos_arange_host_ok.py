# twin of: bugs/dg_dev08_relpos_arange_host.py
# area: device placement
# correct: the aranges are created directly on the activations' device, so the sinusoid table is computed on the GPU with no host work or copy
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RelativeSinusoid(nn.Module):
    def __init__(self, d_model, clamp_len=-1):
        super().__init__()
        self.d_model = d_model
        self.clamp_len = clamp_len

    def forward(self, q_len, k_len, device):
        freq_seq = torch.arange(0, self.d_model, 2, dtype=torch.int64, device=device).float()
        inv_freq = 1.0 / torch.pow(10000.0, freq_seq / self.d_model)
        pos_seq = torch.arange(k_len, -q_len, -1, dtype=torch.int64, device=device).float()
        if self.clamp_len > 0:
            pos_seq = pos_seq.clamp(-self.clamp_len, self.clamp_len)
        sinusoid = torch.einsum("i,d->id", pos_seq, inv_freq)
        pos_emb = torch.cat([sinusoid.sin(), sinusoid.cos()], dim=-1)
        return pos_emb


class RelPosSelfAttention(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.h, self.dh = n_heads, d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.r_proj = nn.Linear(d_model, d_model, bias=False)
        self.r_bias = nn.Parameter(torch.zeros(n_heads, self.dh))
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x, pos_emb):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.h, self.dh).unbind(2)
        r = self.r_proj(pos_emb).view(-1, self.h, self.dh)
        content = torch.einsum("bihd,bjhd->bhij", q, k)
        position = torch.einsum("bihd,jhd->bhij", q + self.r_bias, r)[..., -t:]
        attn = F.softmax((content + position) / math.sqrt(self.dh), dim=-1)
        y = torch.einsum("bhij,bjhd->bihd", attn, v).reshape(b, t, -1)
        return self.out(y)


class RelPosLM(nn.Module):
    def __init__(self, vocab=100, d_model=64, n_heads=4, n_layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.rel_pos = RelativeSinusoid(d_model)
        self.layers = nn.ModuleList([RelPosSelfAttention(d_model, n_heads) for _ in range(n_layers)])
        self.norms = nn.ModuleList([nn.LayerNorm(d_model) for _ in range(n_layers)])
        self.lm_head = nn.Linear(d_model, vocab)

    def forward(self, tokens):
        x = self.embed(tokens)
        t = tokens.shape[1]
        pos_emb = self.rel_pos(t, t, x.device)
        for attn, norm in zip(self.layers, self.norms):
            x = x + attn(norm(x), pos_emb)
        return self.lm_head(x)


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = RelPosLM().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    corpus = torch.randint(0, 100, (64, 33), device=device)
    for epoch in range(2):
        total = torch.zeros((), device=device)
        for i in range(0, 64, 16):
            batch = corpus[i:i + 16]
            logits = model(batch[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += loss.detach()
        print(f"epoch {epoch}: loss {(total / 4).item():.3f}")


if __name__ == "__main__":
    main()
