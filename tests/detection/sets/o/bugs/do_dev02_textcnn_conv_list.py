# source: https://github.com/Shawn1993/cnn-text-classification-pytorch/issues/1
# area: device placement
# bug: the n-gram convolutions are kept in a plain Python list, so model.to(cuda) leaves their weights on the CPU (and out of the optimizer) while the embeddings they receive are on the GPU
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class KimCNN(nn.Module):
    def __init__(self, vocab_size, embed_dim, num_classes, kernel_sizes=(3, 4, 5), num_filters=16, dropout=0.5):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed_dim, padding_idx=0)
        self.convs = [nn.Conv2d(1, num_filters, (k, embed_dim)) for k in kernel_sizes]  # expect: any
        self.dropout = nn.Dropout(dropout)
        self.fc = nn.Linear(len(kernel_sizes) * num_filters, num_classes)

    def forward(self, tokens):
        x = self.embed(tokens).unsqueeze(1)  # (B, 1, L, D)
        feats = [F.relu(conv(x)).squeeze(3) for conv in self.convs]
        feats = [F.max_pool1d(f, f.size(2)).squeeze(2) for f in feats]
        return self.fc(self.dropout(torch.cat(feats, dim=1)))


def synthetic_corpus(n, seq_len, vocab_size, seed):
    """Label 1 iff any 'positive' token (ids 5..9) appears in the sentence."""
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(10, vocab_size, (n, seq_len), generator=g)
    labels = torch.randint(0, 2, (n,), generator=g)
    pos = torch.randint(0, seq_len, (n,), generator=g)
    marker = torch.randint(5, 10, (n,), generator=g)
    rows = labels.nonzero().squeeze(1)
    tokens[rows, pos[rows]] = marker[rows]
    lengths = torch.randint(seq_len // 2, seq_len + 1, (n,), generator=g)
    pad = torch.arange(seq_len).unsqueeze(0) >= lengths.unsqueeze(1)
    tokens = tokens.masked_fill(pad & (labels.unsqueeze(1) == 0), 0)
    return TensorDataset(tokens, labels)


def evaluate(model, loader, device):
    model.eval()
    correct = torch.zeros((), dtype=torch.long, device=device)
    total = 0
    with torch.no_grad():
        for tokens, labels in loader:
            tokens, labels = tokens.to(device), labels.to(device)
            correct += (model(tokens).argmax(1) == labels).sum()
            total += labels.numel()
    return correct.item() / total


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args([])

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    vocab_size, seq_len = 200, 24
    train_loader = DataLoader(synthetic_corpus(640, seq_len, vocab_size, 0), batch_size=args.batch_size, shuffle=True)
    dev_loader = DataLoader(synthetic_corpus(160, seq_len, vocab_size, 1), batch_size=64)

    model = KimCNN(vocab_size, embed_dim=32, num_classes=2).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    for epoch in range(args.epochs):
        model.train()
        for tokens, labels in train_loader:
            tokens, labels = tokens.to(device), labels.to(device)
            loss = F.cross_entropy(model(tokens), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: dev acc {evaluate(model, dev_loader, device):.3f}")


if __name__ == "__main__":
    main()
