"""Train and evaluation loops in functions, dict batches, a validation loader, accuracy."""

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class DictDataset(Dataset):
    def __init__(self, n, seed):
        generator = torch.Generator().manual_seed(seed)
        self.features = torch.randn(n, 4, generator=generator)
        self.labels = (self.features[:, 0] * self.features[:, 1] > 0).long()

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return {"features": self.features[i], "label": self.labels[i]}


def train_one_epoch(model, loader, criterion, optimizer):
    model.train()
    for batch in loader:
        optimizer.zero_grad()
        loss = criterion(model(batch["features"]), batch["label"])
        loss.backward()
        optimizer.step()
    return loss.item()


def evaluate(model, loader, criterion):
    model.eval()
    total, correct, count = 0.0, 0, 0
    with torch.no_grad():
        for batch in loader:
            logits = model(batch["features"])
            total += criterion(logits, batch["label"]).item() * len(batch["label"])
            correct += (logits.argmax(dim=1) == batch["label"]).sum().item()
            count += len(batch["label"])
    return total / count, correct / count


def main():
    torch.manual_seed(0)
    train_loader = DataLoader(DictDataset(160, seed=1), batch_size=32, shuffle=True)
    val_loader = DataLoader(DictDataset(64, seed=2), batch_size=32)
    model = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 2))
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.9)
    for epoch in range(3):
        train_loss = train_one_epoch(model, train_loader, criterion, optimizer)
        val_loss, accuracy = evaluate(model, val_loader, criterion)
        print(f"epoch {epoch}: train {train_loss:.4f} val {val_loss:.4f} acc {accuracy:.3f}")
    print(f"final loss {val_loss:.8f}")


if __name__ == "__main__":
    main()
