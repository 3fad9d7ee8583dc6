# twin of: bugs/ba_dev16_pack_lengths_moved_to_gpu.py
# area: device placement
# correct: lengths is deliberately left on the CPU, as pack_padded_sequence requires, while tokens and labels go to the device
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_sequence
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
VOCAB, PAD = 30, 0


class ParityDataset(Dataset):
    """Variable-length token sequences; label = whether token 7 appears an odd number of times."""

    def __init__(self, n=200):
        self.seqs = [torch.randint(1, VOCAB, (torch.randint(3, 15, (1,)).item(),)) for _ in range(n)]
        self.labels = [int((s == 7).sum().item() % 2) for s in self.seqs]

    def __len__(self):
        return len(self.seqs)

    def __getitem__(self, i):
        return self.seqs[i], self.labels[i]


def collate(batch):
    seqs, labels = zip(*batch)
    lengths = torch.tensor([len(s) for s in seqs], dtype=torch.long)
    padded = pad_sequence(seqs, batch_first=True, padding_value=PAD)
    return padded, lengths, torch.tensor(labels)


class GRUClassifier(nn.Module):
    def __init__(self, emb=16, hidden=32):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, emb, padding_idx=PAD)
        self.rnn = nn.GRU(emb, hidden, batch_first=True)
        self.out = nn.Linear(hidden, 2)

    def forward(self, tokens, lengths):
        packed = pack_padded_sequence(self.embed(tokens), lengths, batch_first=True, enforce_sorted=False)
        _, h = self.rnn(packed)
        return self.out(h[-1])


def main():
    loader = DataLoader(ParityDataset(), batch_size=16, shuffle=True, collate_fn=collate)
    model = GRUClassifier().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    for epoch in range(3):
        correct, seen = 0, 0
        for tokens, lengths, labels in loader:
            tokens, labels = tokens.to(device), labels.to(device)
            logits = model(tokens, lengths)
            loss = F.cross_entropy(logits, labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            correct += (logits.argmax(1) == labels).sum().item()
            seen += labels.numel()
        print(f"epoch {epoch} loss {loss.item():.3f} acc {correct / seen:.3f}")


if __name__ == "__main__":
    main()
