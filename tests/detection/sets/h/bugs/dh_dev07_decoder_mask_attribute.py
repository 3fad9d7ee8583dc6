# source: https://github.com/OpenNMT/OpenNMT-py/pull/240
# area: device placement
# bug: the causal mask is kept as a plain tensor attribute, so decoder.to(device) does not move it and masked_fill meets a CPU mask on CUDA scores
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

MAX_LEN = 64


def subsequent_mask(size):
    return torch.triu(torch.ones(size, size, dtype=torch.bool), diagonal=1)


class DecoderLayer(nn.Module):
    def __init__(self, d_model, heads, max_len=MAX_LEN):
        super().__init__()
        self.heads = heads
        self.self_qkv = nn.Linear(d_model, 3 * d_model)
        self.self_out = nn.Linear(d_model, d_model)
        self.ff = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.ReLU(), nn.Linear(4 * d_model, d_model))
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.mask = subsequent_mask(max_len)  # expect: any

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.self_qkv(self.norm1(x)).chunk(3, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        scores = q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5
        scores = scores.masked_fill(self.mask[:t, :t], float("-inf"))
        attn = F.softmax(scores, dim=-1) @ v
        x = x + self.self_out(attn.transpose(1, 2).reshape(b, t, d))
        return x + self.ff(self.norm2(x))


class TinyLMDecoder(nn.Module):
    def __init__(self, vocab, d_model=64, heads=4, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(MAX_LEN, d_model)
        self.layers = nn.ModuleList(DecoderLayer(d_model, heads) for _ in range(layers))
        self.generator = nn.Linear(d_model, vocab)

    def forward(self, tokens):
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.embed(tokens) + self.pos(positions)
        for layer in self.layers:
            x = layer(x)
        return self.generator(x)


def copy_task_batch(vocab, batch_size=32, seq_len=20):
    half = torch.randint(2, vocab, (batch_size, seq_len // 2))
    seq = torch.cat([half, half], dim=1)
    return seq[:, :-1], seq[:, 1:]


@torch.no_grad()
def greedy_decode(model, prefix, steps):
    out = prefix
    for _ in range(steps):
        nxt = model(out)[:, -1].argmax(dim=-1, keepdim=True)
        out = torch.cat([out, nxt], dim=1)
    return out


def main():
    vocab = 30
    model = TinyLMDecoder(vocab).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for step in range(30):
        inp, tgt = copy_task_batch(vocab)
        inp, tgt = inp.to(device), tgt.to(device)
        logits = model(inp)
        loss = F.cross_entropy(logits.reshape(-1, vocab), tgt.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    print("train loss", loss.item())
    inp, _ = copy_task_batch(vocab, batch_size=2)
    print(greedy_decode(model.eval(), inp[:, :10].to(device), 10).cpu())


if __name__ == "__main__":
    main()
