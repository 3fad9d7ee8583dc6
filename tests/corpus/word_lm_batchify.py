"""A word-level LSTM language model over one long token stream, cut into columns by
`batchify` and into BPTT windows by `get_batch`; the hidden state is detached per window."""

import argparse
import math

import torch
import torch.nn as nn

parser = argparse.ArgumentParser(description="RNN language model")
parser.add_argument("--emsize", type=int, default=16)
parser.add_argument("--nhid", type=int, default=16)
parser.add_argument("--nlayers", type=int, default=2)
parser.add_argument("--lr", type=float, default=5.0)
parser.add_argument("--clip", type=float, default=0.25)
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--batch_size", type=int, default=4)
parser.add_argument("--bptt", type=int, default=8)
parser.add_argument("--seed", type=int, default=1111)
args = parser.parse_args()

torch.manual_seed(args.seed)


class Corpus:
    """A toy grammar: 'the <noun> <verb> the <noun> .' sentences over a small vocabulary."""

    def __init__(self, sentences, seed):
        gen = torch.Generator().manual_seed(seed)
        nouns = ["cat", "dog", "bird", "fish", "child", "teacher"]
        verbs = ["sees", "likes", "follows", "feeds"]
        words = []
        for _ in range(sentences):
            n1, n2 = torch.randint(len(nouns), (2,), generator=gen).tolist()
            v = torch.randint(len(verbs), (1,), generator=gen).item()
            words += ["the", nouns[n1], verbs[v], "the", nouns[n2], "."]
        self.vocab = sorted(set(nouns + verbs + ["the", "."]))
        self.word2idx = {w: i for i, w in enumerate(self.vocab)}
        self.ids = torch.tensor([self.word2idx[w] for w in words], dtype=torch.long)


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous()


def get_batch(source, i):
    seq_len = min(args.bptt, len(source) - 1 - i)
    data = source[i : i + seq_len]
    target = source[i + 1 : i + 1 + seq_len].view(-1)
    return data, target


class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp, nhid, nlayers):
        super().__init__()
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers)
        self.decoder = nn.Linear(nhid, ntoken)
        self.nhid, self.nlayers, self.ntoken = nhid, nlayers, ntoken
        nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -0.1, 0.1)

    def forward(self, input, hidden):
        output, hidden = self.rnn(self.encoder(input), hidden)
        decoded = self.decoder(output).view(-1, self.ntoken)
        return torch.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        return (torch.zeros(self.nlayers, bsz, self.nhid), torch.zeros(self.nlayers, bsz, self.nhid))


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


corpus = Corpus(120, seed=args.seed)
eval_batch_size = 2
train_data = batchify(corpus.ids[:500], args.batch_size)
val_data = batchify(corpus.ids[500:], eval_batch_size)
ntokens = len(corpus.vocab)
model = RNNModel(ntokens, args.emsize, args.nhid, args.nlayers)
criterion = nn.NLLLoss()


def evaluate(data_source):
    model.eval()
    total_loss = 0.0
    hidden = model.init_hidden(eval_batch_size)
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, args.bptt):
            data, targets = get_batch(data_source, i)
            output, hidden = model(data, hidden)
            hidden = repackage_hidden(hidden)
            total_loss += len(data) * criterion(output, targets).item()
    return total_loss / (len(data_source) - 1)


def train(lr):
    model.train()
    hidden = model.init_hidden(args.batch_size)
    for batch, i in enumerate(range(0, train_data.size(0) - 1, args.bptt)):
        data, targets = get_batch(train_data, i)
        model.zero_grad()
        hidden = repackage_hidden(hidden)
        output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)


lr = args.lr
for epoch in range(1, args.epochs + 1):
    train(lr)
    val_loss = evaluate(val_data)
    print(f"| end of epoch {epoch:3d} | valid loss {val_loss:5.2f} | ppl {math.exp(val_loss):8.2f}")
    lr /= 2.0
print(f"final loss {val_loss:.8f}")
