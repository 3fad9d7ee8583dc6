# twin of: bugs/ca_dev04_causal_mask_plain_attribute.py
# area: device placement
# correct: the causal mask is a registered (non-persistent) buffer, so model.to(device) moves it together with the weights
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

VOCAB, BLOCK, EMBED, HEADS = 50, 16, 32, 4


class CausalSelfAttention(nn.Module):
    def __init__(self, embed, heads, block):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(embed, 3 * embed)
        self.proj = nn.Linear(embed, embed)
        self.register_buffer("mask", torch.tril(torch.ones(block, block)).view(1, 1, block, block), persistent=False)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
        att = att.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        return self.proj(y)


class TinyGPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, EMBED)
        self.pos = nn.Embedding(BLOCK, EMBED)
        self.attn = CausalSelfAttention(EMBED, HEADS, BLOCK)
        self.ln = nn.LayerNorm(EMBED)
        self.head = nn.Linear(EMBED, VOCAB)

    def forward(self, idx):
        t = idx.size(1)
        pos = self.pos.weight[:t]
        x = self.tok(idx) + pos
        x = x + self.attn(self.ln(x))
        return self.head(x)


def get_batch(data, batch_size=8):
    ix = torch.randint(0, data.numel() - BLOCK - 1, (batch_size,))
    x = torch.stack([data[i:i + BLOCK] for i in ix])
    y = torch.stack([data[i + 1:i + 1 + BLOCK] for i in ix])
    return x.to(device), y.to(device)


def main():
    data = torch.randint(0, VOCAB, (2000,))
    model = TinyGPT().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for step in range(30):
        x, y = get_batch(data)
        logits = model(x)
        loss = F.cross_entropy(logits.view(-1, VOCAB), y.view(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
