# source: https://github.com/bentrevett/pytorch-seq2seq/issues/4
# area: porting & distributed
# bug: the positional table is a plain tensor attribute pushed to the default GPU in __init__, not a buffer; nn.DataParallel does not replicate it, so the replica on cuda:1 adds a cuda:0 tensor to its activations
import math

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

PAD, BOS = 0, 1


def sinusoid_table(max_len, dim):
    pos = torch.arange(max_len).unsqueeze(1).float()
    div = torch.exp(torch.arange(0, dim, 2).float() * (-math.log(10000.0) / dim))
    table = torch.zeros(max_len, dim)
    table[:, 0::2] = torch.sin(pos * div)
    table[:, 1::2] = torch.cos(pos * div)
    return table


class Seq2SeqTransformer(nn.Module):
    def __init__(self, src_vocab, trg_vocab, device, dim=32, heads=4, layers=1, max_len=64):
        super().__init__()
        self.dim = dim
        self.src_embed = nn.Embedding(src_vocab, dim, padding_idx=PAD)
        self.trg_embed = nn.Embedding(trg_vocab, dim, padding_idx=PAD)
        self.pos_table = sinusoid_table(max_len, dim).to(device)  # expect: any
        self.core = nn.Transformer(dim, heads, layers, layers, dim_feedforward=4 * dim,
                                   dropout=0.1, batch_first=True)
        self.generator = nn.Linear(dim, trg_vocab)

    def embed(self, table, tokens):
        return table(tokens) * math.sqrt(self.dim) + self.pos_table[: tokens.size(1)]

    def forward(self, src, trg_in):
        t = trg_in.size(1)
        causal = torch.ones(t, t, dtype=torch.bool, device=trg_in.device).triu(1)
        out = self.core(
            self.embed(self.src_embed, src), self.embed(self.trg_embed, trg_in),
            tgt_mask=causal, src_key_padding_mask=src.eq(PAD), tgt_key_padding_mask=trg_in.eq(PAD),
        )
        return self.generator(out)


def reversal_corpus(n=192, length=10, vocab=40, seed=0):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(3, vocab, (n, length), generator=g)
    trg = torch.cat([torch.full((n, 1), BOS), src.flip(1)], dim=1)
    return TensorDataset(src, trg)


def train_epoch(model, loader, opt, criterion, device):
    model.train()
    total = torch.zeros((), device=device)
    for src, trg in loader:
        src, trg = src.to(device), trg.to(device)
        logits = model(src, trg[:, :-1])
        loss = criterion(logits.reshape(-1, logits.size(-1)), trg[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        total += loss.detach()
    return total / len(loader)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Seq2SeqTransformer(src_vocab=40, trg_vocab=40, device=device).to(device)
    if torch.cuda.device_count() > 1:
        model = nn.DataParallel(model)
    opt = torch.optim.Adam(model.parameters(), lr=5e-4)
    criterion = nn.CrossEntropyLoss(ignore_index=PAD)
    loader = DataLoader(reversal_corpus(), batch_size=64, shuffle=True)
    for epoch in range(2):
        loss = train_epoch(model, loader, opt, criterion, device)
        print(f"epoch {epoch}: loss {loss.item():.3f}")


if __name__ == "__main__":
    torch.manual_seed(0)
    main()
