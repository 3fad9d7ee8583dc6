# source: https://github.com/pytorch/pytorch/pull/85609
# area: device placement
# bug: the causal mask is rebuilt on the CPU by generate_square_subsequent_mask at every decoding step and then copied to the GPU, adding a host allocation and a host-to-device transfer to each step of the greedy loop
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

PAD, BOS, EOS = 0, 1, 2


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=128):
        super().__init__()
        position = torch.arange(max_len).unsqueeze(1)
        div = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(position * div)
        pe[:, 1::2] = torch.cos(position * div)
        self.register_buffer("pe", pe, persistent=False)

    def forward(self, x):
        return x + self.pe[: x.size(1)]


class Seq2SeqTransformer(nn.Module):
    def __init__(self, vocab_size, d_model=32, nhead=4, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model, padding_idx=PAD)
        self.pos = PositionalEncoding(d_model)
        self.transformer = nn.Transformer(d_model, nhead, layers, layers, dim_feedforward=64,
                                          dropout=0.0, batch_first=True)
        self.generator = nn.Linear(d_model, vocab_size)
        self.scale = math.sqrt(d_model)

    def encode(self, src):
        return self.transformer.encoder(self.pos(self.embed(src) * self.scale))

    def decode(self, tgt, memory, tgt_mask):
        out = self.transformer.decoder(self.pos(self.embed(tgt) * self.scale), memory,
                                       tgt_mask=tgt_mask, tgt_is_causal=True)
        return self.generator(out)

    def forward(self, src, tgt_in):
        mask = nn.Transformer.generate_square_subsequent_mask(tgt_in.size(1), device=src.device)
        return self.decode(tgt_in, self.encode(src), mask)


@torch.no_grad()
def greedy_decode(model, src, max_len):
    model.eval()
    device = src.device
    memory = model.encode(src)
    ys = torch.full((src.size(0), 1), BOS, dtype=torch.long, device=device)
    for _ in range(max_len - 1):
        tgt_mask = nn.Transformer.generate_square_subsequent_mask(ys.size(1)).to(device)  # expect: any
        logits = model.decode(ys, memory, tgt_mask)[:, -1]
        next_word = logits.argmax(dim=-1, keepdim=True)
        ys = torch.cat([ys, next_word], dim=1)
    return ys


def make_copy_batch(batch_size, length, vocab_size, device):
    body = torch.randint(3, vocab_size, (batch_size, length), device=device)
    bos = torch.full((batch_size, 1), BOS, dtype=torch.long, device=device)
    eos = torch.full((batch_size, 1), EOS, dtype=torch.long, device=device)
    return body, torch.cat([bos, body, eos], dim=1)


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    vocab_size, length = 16, 8
    model = Seq2SeqTransformer(vocab_size).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(20):
        model.train()
        src, tgt = make_copy_batch(32, length, vocab_size, device)
        logits = model(src, tgt[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, vocab_size), tgt[:, 1:].reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    src, tgt = make_copy_batch(16, length, vocab_size, device)
    decoded = greedy_decode(model, src, max_len=length + 2)
    token_acc = (decoded[:, 1:length + 1] == src).float().mean()
    print(f"final train loss {loss.item():.3f}, copy accuracy {token_acc.item():.3f}")


if __name__ == "__main__":
    main()
