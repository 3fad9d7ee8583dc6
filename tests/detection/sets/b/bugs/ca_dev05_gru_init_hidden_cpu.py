# source: https://github.com/Lightning-AI/pytorch-lightning/issues/3738
# area: device placement
# bug: init_hidden builds the initial hidden state with torch.zeros and no device, so the GRU gets a CUDA input and a CPU hidden state
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

TEXT = "the quick brown fox jumps over the lazy dog " * 20
CHARS = sorted(set(TEXT))
STOI = {c: i for i, c in enumerate(CHARS)}


class CharRNN(nn.Module):
    def __init__(self, vocab, embed=16, hidden=64, n_layers=2, dropout=0.1):
        super().__init__()
        self.n_layers, self.hidden = n_layers, hidden
        self.emb = nn.Embedding(vocab, embed)
        self.rnn = nn.GRU(embed, hidden, n_layers, dropout=dropout, batch_first=True)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, x, h):
        y, h = self.rnn(self.emb(x), h)
        return self.out(y), h

    def init_hidden(self, batch_size):
        return torch.zeros(self.n_layers, batch_size, self.hidden)  # expect: any


def batches(data, batch_size, seq_len):
    n = (data.numel() - 1) // (batch_size * seq_len) * (batch_size * seq_len)
    x = data[:n].view(batch_size, -1)
    y = data[1:n + 1].view(batch_size, -1)
    for i in range(0, x.size(1), seq_len):
        yield x[:, i:i + seq_len], y[:, i:i + seq_len]


def main():
    data = torch.tensor([STOI[c] for c in TEXT], dtype=torch.long)
    model = CharRNN(len(CHARS)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    batch_size, seq_len = 8, 20
    for epoch in range(3):
        hidden = model.init_hidden(batch_size)
        total = 0.0
        for x, y in batches(data, batch_size, seq_len):
            x, y = x.to(device), y.to(device)
            hidden = hidden.detach()
            logits, hidden = model(x, hidden)
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            total += loss.item()
        print(f"epoch {epoch} loss {total:.3f}")


if __name__ == "__main__":
    main()
