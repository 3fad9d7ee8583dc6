"""A transformer classifier whose mask helper takes a device argument, with positional
encodings registered as a buffer, and the device picked as CUDA, then MPS, then CPU."""

import math

import torch
import torch.nn as nn

if torch.cuda.is_available():
    device = torch.device("cuda")
elif torch.backends.mps.is_available():
    device = torch.device("mps")
else:
    device = torch.device("cpu")


def generate_square_subsequent_mask(sz, device=None):
    return torch.triu(torch.full((sz, sz), float("-inf"), device=device), diagonal=1)


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=32):
        super().__init__()
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, 1, d_model)
        pe[:, 0, 0::2] = torch.sin(position * div_term)
        pe[:, 0, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return x + self.pe[: x.size(0)]


class TransformerModel(nn.Module):
    def __init__(self, ntoken, d_model=16, nhead=2, d_hid=32, nlayers=1):
        super().__init__()
        self.pos_encoder = PositionalEncoding(d_model)
        layer = nn.TransformerEncoderLayer(d_model, nhead, d_hid, dropout=0.0)
        self.transformer_encoder = nn.TransformerEncoder(layer, nlayers, enable_nested_tensor=False)
        self.embedding = nn.Embedding(ntoken, d_model)
        self.d_model = d_model
        self.linear = nn.Linear(d_model, ntoken)

    def forward(self, src, src_mask=None):
        src = self.pos_encoder(self.embedding(src) * math.sqrt(self.d_model))
        if src_mask is None:
            src_mask = generate_square_subsequent_mask(len(src), device=src.device)
        return self.linear(self.transformer_encoder(src, src_mask))


def main():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    ntokens, bptt = 9, 8
    stream = torch.remainder(torch.arange(0, 400) + torch.randint(0, 2, (400,), generator=g).cumsum(0), ntokens)
    data = stream.view(8, -1).t().contiguous().to(device)
    model = TransformerModel(ntokens).to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.9)
    src_mask = generate_square_subsequent_mask(bptt).to(device)
    for epoch in range(2):
        model.train()
        for i in range(0, data.size(0) - 1 - bptt, bptt):
            x, y = data[i : i + bptt], data[i + 1 : i + 1 + bptt]
            output = model(x, src_mask)
            loss = criterion(output.view(-1, ntokens), y.reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            optimizer.step()
        scheduler.step()
    model.eval()
    with torch.no_grad():
        x, y = data[:bptt], data[1 : 1 + bptt]
        final = criterion(model(x).view(-1, ntokens), y.reshape(-1))
    print(f"final loss {final.item():.8f}")


if __name__ == "__main__":
    main()
