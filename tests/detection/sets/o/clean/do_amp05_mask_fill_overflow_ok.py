# twin of: bugs/do_amp05_mask_fill_overflow.py
# area: AMP
# correct: the mask value comes from torch.finfo of the score dtype, so it is representable whether the scores are float32 or float16 under autocast
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class GPTConfig:
    vocab_size = 256
    n_ctx = 32
    n_embd = 64
    n_head = 4
    n_layer = 2


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.n_head = cfg.n_head
        self.c_attn = nn.Linear(cfg.n_embd, 3 * cfg.n_embd)
        self.c_proj = nn.Linear(cfg.n_embd, cfg.n_embd)
        mask = torch.tril(torch.ones(cfg.n_ctx, cfg.n_ctx)).view(1, 1, cfg.n_ctx, cfg.n_ctx)
        self.register_buffer("bias", mask, persistent=False)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q = q.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
        k = k.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
        v = v.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
        w = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        w = w.masked_fill(self.bias[:, :, :t, :t] == 0, torch.finfo(w.dtype).min)
        w = F.softmax(w, dim=-1)
        y = (w @ v).transpose(1, 2).contiguous().view(b, t, c)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.n_embd)
        self.attn = CausalSelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.n_embd)
        self.mlp = nn.Sequential(nn.Linear(cfg.n_embd, 4 * cfg.n_embd), nn.GELU(),
                                 nn.Linear(4 * cfg.n_embd, cfg.n_embd))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2LMHead(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.wpe = nn.Embedding(cfg.n_ctx, cfg.n_embd)
        self.h = nn.ModuleList([Block(cfg) for _ in range(cfg.n_layer)])
        self.ln_f = nn.LayerNorm(cfg.n_embd)
        nn.init.normal_(self.wte.weight, std=0.02)

    def forward(self, tokens):
        pos = torch.arange(tokens.size(1), device=tokens.device)
        x = self.wte(tokens) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return self.ln_f(x) @ self.wte.weight.t()


def train(steps=12, batch=8):
    cfg = GPTConfig()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = device.type == "cuda"
    model = GPT2LMHead(cfg).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=3e-4)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    corpus = torch.randint(0, cfg.vocab_size, (4096,), device=device)
    losses = torch.zeros(steps, device=device)
    for step in range(steps):
        starts = torch.randint(0, corpus.numel() - cfg.n_ctx - 1, (batch,), device=device)
        idx = starts[:, None] + torch.arange(cfg.n_ctx + 1, device=device)
        chunk = corpus[idx]
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
            logits = model(chunk[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, cfg.vocab_size), chunk[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        losses[step] = loss.detach()
    print("loss first/last:", losses[0].item(), losses[-1].item())


if __name__ == "__main__":
    train()
