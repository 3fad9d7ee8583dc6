"""A character-level GRU trained on a short text, then sampled with torch.multinomial
driven by its own torch.Generator so that the sample is reproducible."""

import argparse

import torch
import torch.nn as nn

TEXT = (
    "to be or not to be that is the question whether tis nobler in the mind to suffer "
    "the slings and arrows of outrageous fortune or to take arms against a sea of troubles "
)
chars = sorted(set(TEXT))
stoi = {c: i for i, c in enumerate(chars)}
itos = {i: c for c, i in stoi.items()}
data = torch.tensor([stoi[c] for c in TEXT], dtype=torch.long)


class CharRNN(nn.Module):
    def __init__(self, vocab_size, hidden_size=32):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size, batch_first=True)
        self.head = nn.Linear(hidden_size, vocab_size)

    def forward(self, x, hidden=None):
        out, hidden = self.gru(self.embed(x), hidden)
        return self.head(out), hidden


def random_chunks(seq_len, batch_size, generator):
    starts = torch.randint(0, len(data) - seq_len - 1, (batch_size,), generator=generator)
    x = torch.stack([data[s : s + seq_len] for s in starts])
    y = torch.stack([data[s + 1 : s + seq_len + 1] for s in starts])
    return x, y


def generate(model, prime, length, temperature, generator):
    model.eval()
    with torch.no_grad():
        inp = torch.tensor([[stoi[c] for c in prime]])
        _, hidden = model(inp[:, :-1])
        inp = inp[:, -1:]
        out = prime
        for _ in range(length):
            logits, hidden = model(inp, hidden)
            probs = torch.softmax(logits[0, -1] / temperature, dim=-1)
            idx = torch.multinomial(probs, 1, generator=generator).item()
            out += itos[idx]
            inp = torch.tensor([[idx]])
    model.train()
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--seq-len", type=int, default=16)
    parser.add_argument("--temperature", type=float, default=0.8)
    args = parser.parse_args()

    torch.manual_seed(0)
    batch_gen = torch.Generator().manual_seed(1)
    model = CharRNN(len(chars))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    for step in range(args.steps):
        x, y = random_chunks(args.seq_len, 8, batch_gen)
        logits, _ = model(x)
        loss = loss_fn(logits.reshape(-1, len(chars)), y.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 20 == 0:
            print(f"step {step} loss {loss.item():.4f}")
    sample_gen = torch.Generator().manual_seed(1234)
    print(repr(generate(model, "to be ", 40, args.temperature, sample_gen)))
    with torch.no_grad():
        x, y = data[:-1].unsqueeze(0), data[1:].unsqueeze(0)
        logits, _ = model(x)
        final = loss_fn(logits.reshape(-1, len(chars)), y.reshape(-1))
    print(f"final loss {final.item():.8f}")


if __name__ == "__main__":
    main()
