# source: https://github.com/flairNLP/flair/pull/3651
# area: AMP
# bug: subword-to-word pooling scatters fp16 autocast activations into a buffer created as float32, so on a GPU scatter_add_ raises "scatter(): Expected self.dtype to be equal to src.dtype"
import torch
import torch.nn as nn
import torch.nn.functional as F

NUM_TAGS = 5
SUBWORD_VOCAB = 200


class SubwordEncoder(nn.Module):
    def __init__(self, vocab=SUBWORD_VOCAB, dim=48):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim, padding_idx=0)
        self.ff = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, subword_ids):
        return self.ff(self.embed(subword_ids))


def pool_subwords_to_words(hidden, word_index, num_words, pooling="mean"):
    """hidden: (B, S, D) subword states, word_index: (B, S) word id per subword (num_words = padding)."""
    batch, _, dim = hidden.shape
    index = word_index.unsqueeze(-1).expand(-1, -1, dim)
    summed = torch.zeros(batch, num_words + 1, dim, device=hidden.device)  # expect[pool]: any
    summed.scatter_add_(1, index, hidden)  # expect[pool]: any
    if pooling == "sum":
        return summed[:, :num_words]
    counts = torch.zeros(batch, num_words + 1, device=hidden.device)
    counts.scatter_add_(1, word_index, torch.ones_like(word_index, dtype=counts.dtype))
    return (summed / counts.clamp(min=1).unsqueeze(-1))[:, :num_words]


class SequenceTagger(nn.Module):
    def __init__(self, dim=48):
        super().__init__()
        self.encoder = SubwordEncoder(dim=dim)
        self.classifier = nn.Linear(dim, NUM_TAGS)

    def forward(self, subword_ids, word_index, num_words):
        hidden = self.encoder(subword_ids)
        words = pool_subwords_to_words(hidden, word_index, num_words)
        return self.classifier(words)


def make_batch(batch_size, num_words, device, max_pieces=3):
    """Random segmentation: each word is split into 1..max_pieces subwords, padding maps to slot num_words."""
    per_sample = [torch.repeat_interleave(torch.arange(num_words), torch.randint(1, max_pieces + 1, (num_words,)))
                  for _ in range(batch_size)]
    seq_len = max(len(w) for w in per_sample)
    word_index = torch.full((batch_size, seq_len), num_words, dtype=torch.long)
    for b, w in enumerate(per_sample):
        word_index[b, : len(w)] = w
    subword_ids = torch.randint(1, SUBWORD_VOCAB, (batch_size, seq_len)).masked_fill(word_index == num_words, 0)
    tags = torch.randint(0, NUM_TAGS, (batch_size, num_words))
    return subword_ids.to(device), word_index.to(device), tags.to(device)


def train(model, device, steps=8, num_words=10):
    use_amp = device.type == "cuda"
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    history = []
    for _ in range(steps):
        subword_ids, word_index, tags = make_batch(4, num_words, device)
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
            logits = model(subword_ids, word_index, num_words)
            loss = F.cross_entropy(logits.reshape(-1, NUM_TAGS), tags.reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        history.append(loss.detach())
    return torch.stack(history)


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(3)
    tagger = SequenceTagger().to(device)
    losses = train(tagger, device)
    print("first/last loss:", [round(v, 4) for v in losses[[0, -1]].tolist()])
