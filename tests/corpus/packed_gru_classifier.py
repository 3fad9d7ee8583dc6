"""Variable-length sequences: a collate_fn pads them, the model packs them by length and
pools the padded output with a mask built from the same lengths."""

import random

import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence
from torch.utils.data import DataLoader, Dataset

VOCAB = 30
PAD_IDX = 0


class ParityDataset(Dataset):
    """Token sequences of length 3..9; the label says whether token 7 occurs."""

    def __init__(self, n, seed):
        rng = random.Random(seed)
        self.items = []
        for _ in range(n):
            length = rng.randint(3, 9)
            seq = [rng.randint(1, VOCAB - 1) for _ in range(length)]
            self.items.append((seq, int(7 in seq or 8 in seq)))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, idx):
        seq, label = self.items[idx]
        return torch.tensor(seq), label


def collate_batch(batch):
    seqs, labels = zip(*batch)
    lengths = torch.tensor([len(s) for s in seqs])
    padded = pad_sequence(seqs, batch_first=True, padding_value=PAD_IDX)
    return padded, lengths, torch.tensor(labels)


def lengths_to_mask(lengths, max_len):
    return torch.arange(max_len).unsqueeze(0) < lengths.unsqueeze(1)


class GRUClassifier(nn.Module):
    def __init__(self, emb=12, hidden=16):
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, emb, padding_idx=PAD_IDX)
        self.gru = nn.GRU(emb, hidden, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(2 * hidden, 2)

    def forward(self, padded, lengths):
        embedded = self.embedding(padded)
        packed = pack_padded_sequence(embedded, lengths, batch_first=True, enforce_sorted=False)
        packed_out, _ = self.gru(packed)
        out, _ = pad_packed_sequence(packed_out, batch_first=True, total_length=padded.size(1))
        mask = lengths_to_mask(lengths, padded.size(1)).unsqueeze(-1).float()
        pooled = (out * mask).sum(dim=1) / lengths.unsqueeze(1).float()
        return self.fc(pooled)


def evaluate(model, loader, criterion):
    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for padded, lengths, labels in loader:
            logits = model(padded, lengths)
            total += criterion(logits, labels).item() * labels.size(0)
            count += labels.size(0)
    return total / count


def main():
    torch.manual_seed(0)
    train_loader = DataLoader(
        ParityDataset(160, seed=1), batch_size=16, shuffle=True, collate_fn=collate_batch
    )
    val_loader = DataLoader(ParityDataset(48, seed=2), batch_size=16, collate_fn=collate_batch)
    model = GRUClassifier()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    for epoch in range(3):
        model.train()
        for padded, lengths, labels in train_loader:
            optimizer.zero_grad()
            loss = criterion(model(padded, lengths), labels)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch} val {evaluate(model, val_loader, criterion):.4f}")
    print(f"final loss {evaluate(model, val_loader, criterion):.8f}")


if __name__ == "__main__":
    main()
