"""A tiny transformer language model: positional encodings, causal and padding masks."""

import math

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

PAD = 0


class PositionalEncoding(nn.Module):
    def __init__(self, dim, max_len=64):
        super().__init__()
        position = torch.arange(max_len).unsqueeze(1)
        div = torch.exp(torch.arange(0, dim, 2) * (-math.log(10000.0) / dim))
        pe = torch.zeros(max_len, dim)
        pe[:, 0::2] = torch.sin(position * div)
        pe[:, 1::2] = torch.cos(position * div)
        self.pe = pe.unsqueeze(0)

    def forward(self, x):
        return x + self.pe[:, : x.size(1)]


class TinyLM(nn.Module):
    def __init__(self, vocab=20, dim=16, heads=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim, padding_idx=PAD)
        self.pos = PositionalEncoding(dim)
        layer = nn.TransformerEncoderLayer(dim, heads, 32, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=1, enable_nested_tensor=False)
        self.out = nn.Linear(dim, vocab)

    def forward(self, tokens):
        n = tokens.size(1)
        causal = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
        padding = tokens == PAD
        h = self.pos(self.embed(tokens))
        h = self.encoder(h, mask=causal, src_key_padding_mask=padding)
        return self.out(h)


def main():
    torch.manual_seed(0)
    tokens = torch.randint(1, 20, (64, 9))
    tokens[::4, -2:] = PAD
    train_loader = DataLoader(TensorDataset(tokens), batch_size=16)
    model = TinyLM()
    criterion = nn.CrossEntropyLoss(ignore_index=PAD)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for (batch,) in train_loader:
            optimizer.zero_grad()
            logits = model(batch[:, :-1])
            loss = criterion(logits.reshape(-1, 20), batch[:, 1:].reshape(-1))
            loss.backward()
            optimizer.step()
    print(f"final loss {loss.item():.8f}")


if __name__ == "__main__":
    main()
