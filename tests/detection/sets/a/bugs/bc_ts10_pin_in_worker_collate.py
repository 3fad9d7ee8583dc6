# source: https://github.com/pytorch/pytorch/issues/33754
# area: transfer & sync
# bug: the collate_fn pins memory itself, but it runs inside forked DataLoader workers after CUDA was initialised in the parent, which fails on a GPU (pin_memory=True on the loader is the right place)
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class VarLenSequences(Dataset):
    def __init__(self, n=128, vocab=50):
        g = torch.Generator().manual_seed(3)
        lengths = torch.randint(4, 20, (n,), generator=g)
        self.seqs = [torch.randint(1, vocab, (int(L),), generator=g) for L in lengths]
        self.labels = [int(s.float().mean() > vocab / 2) for s in self.seqs]

    def __len__(self):
        return len(self.seqs)

    def __getitem__(self, i):
        return self.seqs[i], self.labels[i]


def pad_collate(batch):
    seqs, labels = zip(*batch)
    lengths = torch.tensor([len(s) for s in seqs])
    padded = pad_sequence(seqs, batch_first=True, padding_value=0)
    labels = torch.tensor(labels)
    if torch.cuda.is_available():
        padded, labels = padded.pin_memory(), labels.pin_memory()  # expect: any
    return padded, lengths, labels


class BagClassifier(nn.Module):
    def __init__(self, vocab=50, dim=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim, padding_idx=0)
        self.out = nn.Linear(dim, 2)

    def forward(self, tokens, lengths):
        summed = self.emb(tokens).sum(1)
        return self.out(summed / lengths.unsqueeze(1).to(summed.dtype))


def main():
    model = BagClassifier().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    loader = DataLoader(VarLenSequences(), batch_size=16, shuffle=True, num_workers=2, collate_fn=pad_collate)
    for epoch in range(2):
        total = torch.zeros((), device=device)
        for tokens, lengths, labels in loader:
            tokens = tokens.to(device, non_blocking=True)
            lengths = lengths.to(device, non_blocking=True)
            labels = labels.to(device, non_blocking=True)
            loss = nn.functional.cross_entropy(model(tokens, lengths), labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.detach()
        print(f"epoch {epoch}: loss sum {total.item():.3f}")


if __name__ == "__main__":
    main()
