# twin of: bugs/ba_dev09_class_weights_criterion.py
# area: device placement
# correct: the loss module is moved with .to(device), which moves its registered weight buffer along with it
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class ResidueDataset(Dataset):
    """Per-residue embeddings with an imbalanced secondary-structure label."""

    def __init__(self, n=400, dim=24, n_classes=3):
        self.x = torch.randn(n, dim)
        logits = self.x[:, :n_classes] + torch.tensor([1.5, 0.0, -1.0])
        self.y = logits.argmax(1)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


def compute_class_weights(labels, n_classes):
    counts = torch.bincount(labels, minlength=n_classes).float()
    return counts.sum() / (n_classes * counts.clamp(min=1))


class FNN(nn.Module):
    def __init__(self, dim=24, n_classes=3):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, n_classes))

    def forward(self, x):
        return self.net(x)


def run_epoch(model, loader, criterion, optimizer=None):
    train = optimizer is not None
    model.train(train)
    total, correct, seen = 0.0, 0, 0
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        with torch.set_grad_enabled(train):
            logits = model(x)
            loss = criterion(logits, y)
        if train:
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        total += loss.item() * len(y)
        correct += (logits.argmax(1) == y).sum().item()
        seen += len(y)
    return total / seen, correct / seen


def main():
    ds = ResidueDataset()
    loader = DataLoader(ds, batch_size=32, shuffle=True)
    weights = compute_class_weights(ds.y, 3)
    print("class weights:", [round(w, 3) for w in weights.tolist()])
    model = FNN().to(device)
    criterion = nn.CrossEntropyLoss(weight=weights).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    for epoch in range(4):
        loss, acc = run_epoch(model, loader, criterion, optimizer)
        print(f"epoch {epoch} loss {loss:.3f} acc {acc:.3f}")


if __name__ == "__main__":
    main()
