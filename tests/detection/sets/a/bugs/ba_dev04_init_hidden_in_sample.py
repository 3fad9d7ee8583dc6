# source: https://github.com/Lightning-AI/pytorch-lightning/issues/3738
# area: device placement
# bug: init_hidden() builds the LSTM state with torch.zeros on the CPU; training never uses it but sample() does, so generation fails once the model is on the GPU
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

TEXT = "the quick brown fox jumps over the lazy dog. " * 20
CHARS = sorted(set(TEXT))
STOI = {c: i for i, c in enumerate(CHARS)}
ITOS = {i: c for c, i in STOI.items()}


class CharLSTM(nn.Module):
    def __init__(self, vocab_size, emb=16, hidden_size=64, n_layers=2):
        super().__init__()
        self.hidden_size = hidden_size
        self.n_layers = n_layers
        self.embed = nn.Embedding(vocab_size, emb)
        self.lstm = nn.LSTM(emb, hidden_size, n_layers, batch_first=True)
        self.fc = nn.Linear(hidden_size, vocab_size)

    def init_hidden(self, batch_size):
        h = torch.zeros(self.n_layers, batch_size, self.hidden_size)  # expect[hid]: any
        c = torch.zeros(self.n_layers, batch_size, self.hidden_size)  # expect[hid]: any
        return h, c

    def forward(self, x, hidden=None):
        out, hidden = self.lstm(self.embed(x), hidden)
        return self.fc(out), hidden

    @torch.no_grad()
    def sample(self, prefix, length=24, temperature=0.8):
        self.eval()
        hidden = self.init_hidden(1)
        idx = torch.tensor([[STOI[c] for c in prefix]], device=self.fc.weight.device)
        logits, hidden = self(idx, hidden)
        out = list(prefix)
        for _ in range(length):
            probs = F.softmax(logits[:, -1] / temperature, dim=-1)
            nxt = torch.multinomial(probs, 1)
            out.append(ITOS[nxt.item()])
            logits, hidden = self(nxt, hidden)
        return "".join(out)


def batches(data, seq_len=24, batch_size=16):
    for _ in range(6):
        starts = torch.randint(0, data.size(0) - seq_len - 1, (batch_size,))
        x = torch.stack([data[s:s + seq_len] for s in starts])
        y = torch.stack([data[s + 1:s + seq_len + 1] for s in starts])
        yield x, y


def main():
    data = torch.tensor([STOI[c] for c in TEXT])
    model = CharLSTM(len(CHARS)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    for epoch in range(3):
        model.train()
        for x, y in batches(data):
            x, y = x.to(device), y.to(device)
            logits, _ = model(x)
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch} loss {loss.item():.3f}")
        print("sample:", repr(model.sample("the ")))


if __name__ == "__main__":
    main()
