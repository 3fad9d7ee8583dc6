# source: https://github.com/GRAAL-Research/deepparse/pull/298
# area: device placement
# bug: the padding mask for the attention scores is built from Python lengths on the CPU, then used to mask the GPU alignment scores
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


class Encoder(nn.Module):
    def __init__(self, vocab_size, emb_dim, hidden):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, emb_dim, padding_idx=0)
        self.lstm = nn.LSTM(emb_dim, hidden, batch_first=True)

    def forward(self, tokens, lengths):
        packed = pack_padded_sequence(self.embed(tokens), lengths, batch_first=True, enforce_sorted=False)
        out, (h, c) = self.lstm(packed)
        out, _ = pad_packed_sequence(out, batch_first=True)
        return out, (h, c)


class AttentionDecoder(nn.Module):
    def __init__(self, num_tags, hidden):
        super().__init__()
        self.tag_embed = nn.Embedding(num_tags + 1, hidden)
        self.lstm = nn.LSTM(2 * hidden, hidden, batch_first=True)
        self.weights = nn.Parameter(torch.randn(hidden, hidden) * 0.1)
        self.out = nn.Linear(2 * hidden, num_tags)

    def _attention(self, query, enc_out, lengths):
        scores = torch.bmm(enc_out @ self.weights, query.transpose(1, 2)).squeeze(-1)
        longest = enc_out.size(1)
        mask = torch.arange(longest)[None, :] < torch.tensor(lengths)[:, None]  # expect[mask]: any
        scores = scores.masked_fill(~mask, float("-inf"))  # expect[mask]: any
        attn = F.softmax(scores, dim=1)
        return torch.bmm(attn.unsqueeze(1), enc_out)

    def forward(self, prev_tag, hidden, enc_out, lengths):
        query = hidden[0].transpose(0, 1)
        context = self._attention(query, enc_out, lengths)
        step_in = torch.cat((self.tag_embed(prev_tag), context), dim=-1)
        out, hidden = self.lstm(step_in, hidden)
        return self.out(torch.cat((out, context), dim=-1)).squeeze(1), hidden


class AddressTagger(nn.Module):
    def __init__(self, vocab_size=200, num_tags=6, emb_dim=32, hidden=48):
        super().__init__()
        self.num_tags = num_tags
        self.encoder = Encoder(vocab_size, emb_dim, hidden)
        self.decoder = AttentionDecoder(num_tags, hidden)

    def forward(self, tokens, lengths, target=None):
        enc_out, hidden = self.encoder(tokens, lengths)
        batch, steps = tokens.shape
        prev = torch.full((batch, 1), self.num_tags, dtype=torch.long, device=tokens.device)
        logits = []
        for t in range(steps):
            step_logits, hidden = self.decoder(prev, hidden, enc_out, lengths)
            logits.append(step_logits)
            prev = (target[:, t] if target is not None else step_logits.argmax(-1)).unsqueeze(1)
        return torch.stack(logits, dim=1)


def make_batch(batch_size=16, max_len=9, vocab_size=200, num_tags=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(3, max_len + 1, (batch_size,), generator=g).tolist()
    tokens = torch.zeros(batch_size, max_len, dtype=torch.long)
    tags = torch.zeros(batch_size, max_len, dtype=torch.long)
    for i, n in enumerate(lengths):
        tokens[i, :n] = torch.randint(1, vocab_size, (n,), generator=g)
        tags[i, :n] = tokens[i, :n] % num_tags
    return tokens, tags, lengths


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    model = AddressTagger().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    for step in range(10):
        tokens, tags, lengths = make_batch(seed=step)
        tokens, tags = tokens.to(device), tags.to(device)
        logits = model(tokens, lengths, target=tags)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), tags.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"final loss {loss.item():.3f}")
