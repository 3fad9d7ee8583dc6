# source: https://github.com/huggingface/transformers/pull/44782
# area: device placement
# bug: the sinusoidal relative position table is built with CPU torch.arange on every forward and only then copied to the GPU, adding CPU work and a blocking host-to-device copy per call
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RelativeSelfAttention(nn.Module):
    def __init__(self, d_model, n_heads, dropout=0.1):
        super().__init__()
        self.n_heads = n_heads
        self.d_head = d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.r_net = nn.Linear(d_model, d_model, bias=False)
        self.r_w_bias = nn.Parameter(torch.zeros(n_heads, self.d_head))
        self.r_r_bias = nn.Parameter(torch.zeros(n_heads, self.d_head))
        self.out = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, h, pos_emb):
        bsz, qlen, _ = h.shape
        q, k, v = self.qkv(h).view(bsz, qlen, 3, self.n_heads, self.d_head).unbind(2)
        r = self.r_net(pos_emb).view(-1, self.n_heads, self.d_head)
        ac = torch.einsum("bihd,bjhd->bhij", q + self.r_w_bias, k)
        bd = torch.einsum("bihd,lhd->bhil", q + self.r_r_bias, r)
        i = torch.arange(qlen, device=h.device)
        rel_index = (qlen - 1 - i[:, None] + i[None, :]).expand(bsz, self.n_heads, qlen, qlen)
        bd = bd.gather(-1, rel_index)
        attn = F.softmax((ac + bd) / math.sqrt(self.d_head), dim=-1)
        ctx = torch.einsum("bhij,bjhd->bihd", self.drop(attn), v).reshape(bsz, qlen, -1)
        return self.out(ctx)


class RelEncoderLayer(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.attn = RelativeSelfAttention(d_model, n_heads)
        self.ff = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))
        self.ln1 = nn.LayerNorm(d_model)
        self.ln2 = nn.LayerNorm(d_model)

    def forward(self, h, pos_emb):
        h = self.ln1(h + self.attn(h, pos_emb))
        return self.ln2(h + self.ff(h))


class RelTransformerClassifier(nn.Module):
    def __init__(self, vocab_size, n_classes, d_model=64, n_heads=4, n_layers=2):
        super().__init__()
        self.d_model = d_model
        self.embed = nn.Embedding(vocab_size, d_model)
        self.layers = nn.ModuleList(RelEncoderLayer(d_model, n_heads) for _ in range(n_layers))
        self.head = nn.Linear(d_model, n_classes)

    def relative_positional_encoding(self, qlen):
        freq_seq = torch.arange(0, self.d_model, 2.0, dtype=torch.float)  # expect[w]: any
        inv_freq = 1.0 / torch.pow(10000, freq_seq / self.d_model)
        pos_seq = torch.arange(qlen - 1, -qlen, -1.0, dtype=torch.float)  # expect[w]: any
        sinusoid = torch.einsum("i,d->id", pos_seq, inv_freq)
        return torch.cat([sinusoid.sin(), sinusoid.cos()], dim=-1)

    def forward(self, tokens):
        h = self.embed(tokens)
        pos_emb = self.relative_positional_encoding(tokens.size(1)).to(h.device)
        for layer in self.layers:
            h = layer(h, pos_emb)
        return self.head(h.mean(dim=1))


def make_batch(batch_size, seq_len, vocab_size, device):
    tokens = torch.randint(1, vocab_size, (batch_size, seq_len), device=device)
    labels = (tokens[:, : seq_len // 2] > vocab_size // 2).sum(1) > seq_len // 4
    return tokens, labels.long()


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    vocab_size, seq_len = 50, 32
    model = RelTransformerClassifier(vocab_size, n_classes=2).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    correct = torch.zeros((), device=device)
    for step in range(12):
        tokens, labels = make_batch(16, seq_len, vocab_size, device)
        logits = model(tokens)
        loss = F.cross_entropy(logits, labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        correct += (logits.argmax(-1) == labels).sum()
    print(f"train accuracy {(correct / (12 * 16)).item():.3f}")


if __name__ == "__main__":
    main()
