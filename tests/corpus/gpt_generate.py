"""A small decoder-only transformer, nanoGPT style, on a synthetic token stream.

Sinusoidal positions and the causal mask come from module-level helpers called inside
forward; batches are cut from one long tensor by `get_batch`; `generate` samples with
torch.multinomial and a seeded torch.Generator.
"""

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Config:
    vocab_size: int = 16
    block_size: int = 12
    n_embd: int = 16
    n_head: int = 2
    n_layer: int = 2
    batch_size: int = 8
    max_iters: int = 30
    learning_rate: float = 3e-3


def positional_encoding(seq_len, dim):
    position = torch.arange(seq_len, dtype=torch.float).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, dim, 2).float() * (-math.log(10000.0) / dim))
    pe = torch.zeros(seq_len, dim)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe


def causal_mask(n):
    return torch.tril(torch.ones(n, n)).view(1, 1, n, n)


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd)
        self.n_head = config.n_head

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(causal_mask(T) == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd)
        self.mlp = nn.Sequential(
            nn.Linear(config.n_embd, 4 * config.n_embd),
            nn.GELU(),
            nn.Linear(4 * config.n_embd, config.n_embd),
        )

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.blocks = nn.Sequential(*[Block(config) for _ in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(config.n_embd)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)

    def forward(self, idx, targets=None):
        b, t = idx.size()
        x = self.wte(idx) + positional_encoding(t, self.config.n_embd)
        x = self.ln_f(self.blocks(x))
        logits = self.lm_head(x)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, generator=None):
        for _ in range(max_new_tokens):
            idx_cond = idx[:, -self.config.block_size :]
            logits, _ = self(idx_cond)
            probs = F.softmax(logits[:, -1, :] / temperature, dim=-1)
            idx_next = torch.multinomial(probs, num_samples=1, generator=generator)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx


def make_stream(n, vocab):
    """Counting patterns: 1 2 3 ... k, with k drawn per run."""
    gen = torch.Generator().manual_seed(0)
    tokens = []
    while len(tokens) < n:
        k = int(torch.randint(3, vocab, (1,), generator=gen))
        tokens += list(range(1, k))
    return torch.tensor(tokens[:n], dtype=torch.long)


config = Config()
data = make_stream(600, config.vocab_size)
n = int(0.9 * len(data))
train_data, val_data = data[:n], data[n:]


def get_batch(split):
    source = train_data if split == "train" else val_data
    ix = torch.randint(len(source) - config.block_size, (config.batch_size,))
    x = torch.stack([source[i : i + config.block_size] for i in ix])
    y = torch.stack([source[i + 1 : i + 1 + config.block_size] for i in ix])
    return x, y


@torch.no_grad()
def estimate_loss(model):
    model.eval()
    x = torch.stack([val_data[i : i + config.block_size] for i in range(0, 40, 4)])
    y = torch.stack([val_data[i + 1 : i + 1 + config.block_size] for i in range(0, 40, 4)])
    _, loss = model(x, y)
    model.train()
    return loss.item()


if __name__ == "__main__":
    torch.manual_seed(1337)
    model = GPT(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate)
    for it in range(config.max_iters):
        xb, yb = get_batch("train")
        logits, loss = model(xb, yb)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if it % 10 == 0:
            print(f"iter {it}: train loss {loss.item():.4f}")
    sampler = torch.Generator().manual_seed(42)
    context = torch.ones((1, 1), dtype=torch.long)
    print(model.generate(context, max_new_tokens=10, generator=sampler)[0].tolist())
    print(f"final loss {estimate_loss(model):.8f}")
