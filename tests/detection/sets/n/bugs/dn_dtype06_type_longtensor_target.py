# source: https://github.com/udacity/deep-learning-v2-pytorch/issues/73
# area: dtype
# bug: the loss casts int32 targets with .type(torch.LongTensor), which also moves them to the CPU, so on CUDA the logits and targets end up on different devices
import numpy as np
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

TEXT = ("the quick brown fox jumps over the lazy dog while the cat sleeps by the warm fire " * 15)


class CharCodec:
    def __init__(self, text):
        self.chars = sorted(set(text))
        self.index = {c: i for i, c in enumerate(self.chars)}

    def encode(self, text):
        return np.array([self.index[c] for c in text], dtype=np.int32)


def batch_stream(encoded, batch_size, seq_len):
    per_batch = batch_size * seq_len
    n_batches = len(encoded) // per_batch
    arr = encoded[: n_batches * per_batch].reshape(batch_size, -1)
    for start in range(0, arr.shape[1] - seq_len, seq_len):
        x = arr[:, start:start + seq_len]
        y = arr[:, start + 1:start + seq_len + 1]
        yield torch.from_numpy(np.ascontiguousarray(x)), torch.from_numpy(np.ascontiguousarray(y))


class CharRNN(nn.Module):
    def __init__(self, vocab, hidden=64, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, 32)
        self.lstm = nn.LSTM(32, hidden, layers, batch_first=True, dropout=0.1)
        self.fc = nn.Linear(hidden, vocab)

    def forward(self, x, state=None):
        out, state = self.lstm(self.embed(x), state)
        return self.fc(out), state


class SequenceCrossEntropy(nn.Module):
    def __init__(self, vocab):
        super().__init__()
        self.vocab = vocab
        self.ce = nn.CrossEntropyLoss()

    def forward(self, logits, targets):
        flat_logits = logits.reshape(-1, self.vocab)
        flat_targets = targets.reshape(-1).type(torch.LongTensor)  # expect: any
        return self.ce(flat_logits, flat_targets)


def train(model, codec, epochs=2, batch_size=8, seq_len=25, clip=5.0):
    criterion = SequenceCrossEntropy(len(codec.chars))
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    encoded = codec.encode(TEXT)
    for epoch in range(epochs):
        model.train()
        state = None
        total = torch.zeros((), device=device)
        steps = 0
        for x, y in batch_stream(encoded, batch_size, seq_len):
            x, y = x.to(device).long(), y.to(device)
            if state is not None:
                state = tuple(s.detach() for s in state)
            logits, state = model(x, state)
            loss = criterion(logits, y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), clip)
            optimizer.step()
            total += loss.detach()
            steps += 1
        print(f"epoch {epoch}: mean loss {(total / steps).item():.3f}")


if __name__ == "__main__":
    torch.manual_seed(0)
    codec = CharCodec(TEXT)
    model = CharRNN(len(codec.chars)).to(device)
    train(model, codec)
