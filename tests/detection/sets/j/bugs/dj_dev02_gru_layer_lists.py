# source: https://github.com/pytorch/pytorch/issues/21905
# area: device placement
# bug: the per-layer Linear gates live in plain Python lists, so model.to(device) leaves their weights on the CPU while inputs are on the GPU
import torch
import torch.nn as nn
import torch.nn.functional as F


class StackedGRU(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers, bias=True):
        super().__init__()
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.x2h = []  # expect[w]: any
        self.h2h = []  # expect[w]: any
        for layer in range(num_layers):
            in_dim = input_size if layer == 0 else hidden_size
            self.x2h.append(nn.Linear(in_dim, 3 * hidden_size, bias=bias))
            self.h2h.append(nn.Linear(hidden_size, 3 * hidden_size, bias=bias))

    def cell(self, layer, x, h):
        gx = self.x2h[layer](x)
        gh = self.h2h[layer](h)
        rx, zx, nx = gx.chunk(3, dim=-1)
        rh, zh, nh = gh.chunk(3, dim=-1)
        r = torch.sigmoid(rx + rh)
        z = torch.sigmoid(zx + zh)
        n = torch.tanh(nx + r * nh)
        return (1 - z) * n + z * h

    def forward(self, inputs, hidden=None):
        batch, seq_len, _ = inputs.shape
        if hidden is None:
            hidden = inputs.new_zeros(self.num_layers, batch, self.hidden_size)
        states = list(hidden.unbind(0))
        outputs = []
        for t in range(seq_len):
            x = inputs[:, t]
            for layer in range(self.num_layers):
                states[layer] = self.cell(layer, x, states[layer])
                x = states[layer]
            outputs.append(x)
        return torch.stack(outputs, dim=1), torch.stack(states, dim=0)


class CharLM(nn.Module):
    def __init__(self, vocab_size, embed_dim=32, hidden_size=64, num_layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed_dim)
        self.rnn = StackedGRU(embed_dim, hidden_size, num_layers)
        self.head = nn.Linear(hidden_size, vocab_size)

    def forward(self, tokens, hidden=None):
        out, hidden = self.rnn(self.embed(tokens), hidden)
        return self.head(out), hidden


def synthetic_corpus(vocab_size, length, generator):
    base = torch.randint(0, vocab_size, (16,), generator=generator)
    reps = length // base.numel() + 1
    noise = torch.randint(0, vocab_size, (reps * base.numel(),), generator=generator)
    keep = torch.rand(reps * base.numel(), generator=generator) < 0.9
    return torch.where(keep, base.repeat(reps), noise)[:length]


def batches(corpus, batch_size, bptt):
    n = corpus.numel() // batch_size
    data = corpus[: n * batch_size].view(batch_size, n)
    for i in range(0, n - 1 - bptt, bptt):
        yield data[:, i:i + bptt], data[:, i + 1:i + 1 + bptt]


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    vocab_size = 24
    gen = torch.Generator().manual_seed(1)
    corpus = synthetic_corpus(vocab_size, 2000, gen)

    model = CharLM(vocab_size).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)

    total = torch.zeros((), device=device)
    steps = 0
    for epoch in range(1):
        hidden = None
        for inputs, targets in batches(corpus, batch_size=8, bptt=20):
            inputs, targets = inputs.to(device), targets.to(device)
            logits, hidden = model(inputs, hidden)
            hidden = hidden.detach()
            loss = F.cross_entropy(logits.reshape(-1, vocab_size), targets.reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.detach()
            steps += 1
    print(f"steps {steps} mean loss {(total / steps).item():.3f}")


if __name__ == "__main__":
    main()
