"""An EmbeddingBag text classifier with nested batches: ((tokens, offsets), labels)."""

import torch
import torch.nn as nn
from torch.utils.data import DataLoader


def collate(samples):
    tokens = torch.cat([s[0] for s in samples])
    lengths = torch.tensor([len(s[0]) for s in samples])
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)[:-1]])
    labels = torch.tensor([s[1] for s in samples])
    return (tokens, offsets), labels


class BagClassifier(nn.Module):
    def __init__(self, vocab=50, dim=8, classes=2):
        super().__init__()
        self.bag = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.fc = nn.Linear(dim, classes)

    def forward(self, tokens, offsets):
        return self.fc(self.bag(tokens, offsets))


def main():
    torch.manual_seed(0)
    samples = []
    for i in range(80):
        length = 3 + i % 5
        words = torch.randint(0, 50, (length,))
        samples.append((words, int(words.float().mean() > 24.5)))
    loader = DataLoader(samples, batch_size=16, collate_fn=collate)
    model = BagClassifier()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    for epoch in range(3):
        for (tokens, offsets), labels in loader:
            optimizer.zero_grad()
            loss = criterion(model(tokens, offsets), labels)
            loss.backward()
            optimizer.step()
    print(f"final loss {loss.item():.8f}")


if __name__ == "__main__":
    main()
