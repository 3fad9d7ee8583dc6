"""A word-level GRU language model with a device chosen from a --no-cuda flag: batchify
moves the columns to the device, init_hidden uses weight.new_zeros, and the best model is
saved with torch.save and reloaded with map_location."""

import argparse
import os
import tempfile

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--nhid", type=int, default=16)
parser.add_argument("--bptt", type=int, default=6)
parser.add_argument("--batch_size", type=int, default=4)
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--lr", type=float, default=4.0)
parser.add_argument("--no-cuda", action="store_true")
parser.add_argument("--seed", type=int, default=1111)
args = parser.parse_args()

torch.manual_seed(args.seed)
device = torch.device("cuda" if torch.cuda.is_available() and not args.no_cuda else "cpu")


def make_corpus(n_tokens, vocab, seed):
    g = torch.Generator().manual_seed(seed)
    ids = [0]
    for _ in range(n_tokens - 1):
        step = int(torch.randint(1, 3, (1,), generator=g))
        ids.append((ids[-1] + step) % vocab)
    return torch.tensor(ids)


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous().to(device)


def get_batch(source, i):
    seq_len = min(args.bptt, len(source) - 1 - i)
    return source[i : i + seq_len], source[i + 1 : i + 1 + seq_len].view(-1)


class RNNModel(nn.Module):
    def __init__(self, ntoken, nhid):
        super().__init__()
        self.encoder = nn.Embedding(ntoken, nhid)
        self.rnn = nn.GRU(nhid, nhid)
        self.decoder = nn.Linear(nhid, ntoken)
        self.ntoken, self.nhid = ntoken, nhid

    def forward(self, input, hidden):
        output, hidden = self.rnn(self.encoder(input), hidden)
        return torch.log_softmax(self.decoder(output).view(-1, self.ntoken), dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return weight.new_zeros(1, bsz, self.nhid)


VOCAB = 10
train_data = batchify(make_corpus(400, VOCAB, 1), args.batch_size)
val_data = batchify(make_corpus(120, VOCAB, 2), 2)
model = RNNModel(VOCAB, args.nhid).to(device)
criterion = nn.NLLLoss()


def evaluate(data_source):
    model.eval()
    total_loss = 0.0
    hidden = model.init_hidden(2)
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, args.bptt):
            data, targets = get_batch(data_source, i)
            output, hidden = model(data, hidden)
            total_loss += len(data) * criterion(output, targets).item()
    return total_loss / (len(data_source) - 1)


def train(lr):
    model.train()
    hidden = model.init_hidden(args.batch_size)
    for i in range(0, train_data.size(0) - 1, args.bptt):
        data, targets = get_batch(train_data, i)
        hidden = hidden.detach()
        model.zero_grad()
        output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)


with tempfile.TemporaryDirectory() as folder:
    save_path = os.path.join(folder, "model.pt")
    best_val_loss = None
    for epoch in range(1, args.epochs + 1):
        train(args.lr)
        val_loss = evaluate(val_data)
        print(f"| end of epoch {epoch} | valid loss {val_loss:5.2f}")
        if best_val_loss is None or val_loss < best_val_loss:
            torch.save(model.state_dict(), save_path)
            best_val_loss = val_loss
    model = RNNModel(VOCAB, args.nhid).to(device)
    model.load_state_dict(torch.load(save_path, map_location=device))
print(f"final loss {evaluate(val_data):.8f}")
