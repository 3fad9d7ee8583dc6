# source: https://github.com/hunkim/PyTorchZeroToAll/pull/6
# area: device placement
# bug: the training step calls inputs.to(device) / labels.to(device) without assigning the result; Tensor.to is not in-place, so the one-hot inputs stay on the CPU while the RNN is on the GPU
import torch
import torch.nn as nn


class CharVocab:
    def __init__(self, text):
        self.chars = sorted(set(text))
        self.stoi = {c: i for i, c in enumerate(self.chars)}

    def __len__(self):
        return len(self.chars)

    def encode(self, s):
        return torch.tensor([self.stoi[c] for c in s], dtype=torch.long)

    def decode(self, ids):
        return "".join(self.chars[i] for i in ids)


class CharRNN(nn.Module):
    def __init__(self, vocab_size, hidden_size=32, num_layers=1):
        super().__init__()
        self.vocab_size = vocab_size
        self.rnn = nn.RNN(vocab_size, hidden_size, num_layers=num_layers, batch_first=True)
        self.fc = nn.Linear(hidden_size, vocab_size)

    def forward(self, one_hot, hidden=None):
        out, hidden = self.rnn(one_hot, hidden)
        return self.fc(out), hidden


def make_sequences(vocab, text, seq_len):
    ids = vocab.encode(text)
    xs, ys = [], []
    for start in range(0, len(ids) - seq_len):
        xs.append(ids[start:start + seq_len])
        ys.append(ids[start + 1:start + seq_len + 1])
    x = torch.stack(xs)
    return nn.functional.one_hot(x, len(vocab)).float(), torch.stack(ys)


def train_step(model, criterion, optimizer, inputs, labels, device):
    inputs.to(device)  # expect[w]: any
    labels.to(device)  # expect[w]: any
    logits, _ = model(inputs)
    loss = criterion(logits.reshape(-1, model.vocab_size), labels.reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.detach()


@torch.no_grad()
def greedy_sample(model, vocab, prefix, length, device):
    ids = vocab.encode(prefix)
    one_hot = nn.functional.one_hot(ids, len(vocab)).float().unsqueeze(0).to(device)
    logits, hidden = model(one_hot)
    out = list(ids.tolist())
    nxt = logits[0, -1].argmax()
    for _ in range(length):
        out.append(nxt)
        step = nn.functional.one_hot(nxt.view(1, 1), len(vocab)).float()
        logits, hidden = model(step, hidden)
        nxt = logits[0, -1].argmax()
    return vocab.decode([int(i) for i in out])


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    text = "hello world, hello pytorch, hello gpu. " * 8
    vocab = CharVocab(text)
    inputs, labels = make_sequences(vocab, text, seq_len=12)
    model = CharRNN(len(vocab)).to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for epoch in range(40):
        loss = train_step(model, criterion, optimizer, inputs, labels, device)
        if epoch % 20 == 19:
            print(f"epoch {epoch + 1}: loss {loss.item():.3f}")
    print(greedy_sample(model, vocab, "hel", 20, device))


if __name__ == "__main__":
    torch.manual_seed(0)
    main()
