# source: https://github.com/facebookresearch/pytext/pull/297
# area: device placement
# bug: the BiLSTM representation builds its zero initial state with torch.zeros(...) and no device, so on the GPU the hidden state is on the CPU while the embedded tokens are on cuda and the LSTM call fails
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


class BiLSTMRepresentation(nn.Module):
    def __init__(self, embed_dim, hidden_dim, num_layers=1, dropout=0.1):
        super().__init__()
        self.hidden_dim = hidden_dim
        self.num_layers = num_layers
        self.lstm = nn.LSTM(embed_dim, hidden_dim, num_layers=num_layers,
                            batch_first=True, bidirectional=True)
        self.dropout = nn.Dropout(dropout)

    def zero_state(self, batch_size):
        shape = (2 * self.num_layers, batch_size, self.hidden_dim)
        return torch.zeros(shape), torch.zeros(shape)  # expect: any

    def forward(self, embedded, lengths):
        state = self.zero_state(embedded.size(0))
        packed = pack_padded_sequence(embedded, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, _ = self.lstm(packed, state)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=embedded.size(1))
        return self.dropout(out)


class IntentClassifier(nn.Module):
    def __init__(self, vocab_size, num_intents, embed_dim=64, hidden_dim=64):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed_dim, padding_idx=0)
        self.rep = BiLSTMRepresentation(embed_dim, hidden_dim)
        self.decoder = nn.Linear(2 * hidden_dim, num_intents)

    def forward(self, tokens, lengths):
        rep = self.rep(self.embed(tokens), lengths)
        mask = (tokens != 0).unsqueeze(-1).float()
        pooled = (rep * mask).sum(1) / mask.sum(1).clamp_min(1.0)
        return self.decoder(pooled)


def make_batch(batch_size, max_len, vocab_size, num_intents, gen):
    lengths = torch.randint(3, max_len + 1, (batch_size,), generator=gen)
    intents = torch.randint(0, num_intents, (batch_size,), generator=gen)
    tokens = torch.zeros(batch_size, max_len, dtype=torch.long)
    for i in range(batch_size):
        n = int(lengths[i])
        tokens[i, :n] = torch.randint(1, vocab_size, (n,), generator=gen)
        tokens[i, 0] = 1 + int(intents[i]) * 7 % (vocab_size - 1)
    return tokens, lengths, intents


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    vocab_size, num_intents = 200, 6
    model = IntentClassifier(vocab_size, num_intents).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    gen = torch.Generator().manual_seed(0)
    for epoch in range(3):
        model.train()
        epoch_loss = torch.zeros((), device=device)
        for _ in range(10):
            tokens, lengths, intents = make_batch(32, 20, vocab_size, num_intents, gen)
            tokens, intents = tokens.to(device), intents.to(device)
            loss = F.cross_entropy(model(tokens, lengths), intents)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            epoch_loss += loss.detach()
        print(f"epoch {epoch}: loss {(epoch_loss / 10).item():.3f}")


if __name__ == "__main__":
    torch.manual_seed(0)
    main()
