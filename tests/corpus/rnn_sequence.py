"""A GRU sequence classifier whose hidden state is made in forward."""

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class SequenceClassifier(nn.Module):
    def __init__(self, features=5, hidden=16, classes=2):
        super().__init__()
        self.hidden = hidden
        self.rnn = nn.GRU(features, hidden, batch_first=True)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        h0 = torch.zeros(1, x.size(0), self.hidden)
        out, _ = self.rnn(x, h0)
        return self.head(out[:, -1])


def main():
    torch.manual_seed(0)
    seqs = torch.randn(96, 7, 5)
    targets = (seqs.sum(dim=(1, 2)) > 0).long()
    train_loader = DataLoader(TensorDataset(seqs, targets), batch_size=16)
    model = SequenceClassifier()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.2)
    for epoch in range(2):
        for batch_x, batch_y in train_loader:
            optimizer.zero_grad()
            loss = criterion(model(batch_x), batch_y)
            loss.backward()
            optimizer.step()
    model.eval()
    with torch.no_grad():
        final = criterion(model(seqs), targets)
    print(f"final loss {final.item():.8f}")


if __name__ == "__main__":
    main()
