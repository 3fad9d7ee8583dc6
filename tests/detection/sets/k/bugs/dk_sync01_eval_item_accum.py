# source: https://github.com/numenta/nupic.research/pull/249
# area: transfer & sync
# bug: evaluate_model calls .item() on the batch loss and the correct-count every batch, forcing a GPU->host sync per batch
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class SparseMLP(nn.Module):
    def __init__(self, in_dim=64, hidden=128, n_classes=10, k_active=32):
        super().__init__()
        self.fc1 = nn.Linear(in_dim, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.head = nn.Linear(hidden, n_classes)
        self.k_active = k_active

    def kwinners(self, x):
        thresh = x.topk(self.k_active, dim=1).values[:, -1:]
        return x * (x >= thresh).to(x.dtype)

    def forward(self, x):
        x = self.kwinners(F.relu(self.fc1(x)))
        x = self.kwinners(F.relu(self.fc2(x)))
        return F.log_softmax(self.head(x), dim=1)


def make_loader(n=1024, in_dim=64, n_classes=10, batch_size=64):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, in_dim, generator=g)
    y = torch.randint(0, n_classes, (n,), generator=g)
    return DataLoader(TensorDataset(x, y), batch_size=batch_size, shuffle=False,
                      pin_memory=device.type == "cuda")


def evaluate_model(model, loader, device, criterion=F.nll_loss, progress=None):
    model.eval()
    loss = 0.0
    correct = 0
    total = 0
    with torch.no_grad():
        for batch_idx, (data, target) in enumerate(loader):
            data, target = data.to(device), target.to(device)
            output = model(data)
            total += len(data)
            loss += criterion(output, target, reduction="sum").item()  # expect[w]: any
            pred = output.max(1, keepdim=True)[1]
            correct += pred.eq(target.view_as(pred)).sum().item()  # expect[w]: any
            if progress is not None and batch_idx % progress == 0:
                print(f"  eval batch {batch_idx}")
    return {
        "total_correct": correct,
        "total_tested": total,
        "mean_loss": loss / total if total > 0 else 0.0,
        "mean_accuracy": correct / total if total > 0 else 0.0,
    }


def train_epoch(model, loader, optimizer):
    model.train()
    for data, target in loader:
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad(set_to_none=True)
        loss = F.nll_loss(model(data), target)
        loss.backward()
        optimizer.step()


def main():
    torch.manual_seed(0)
    model = SparseMLP().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    train_loader = make_loader()
    test_loader = make_loader(n=512)
    for epoch in range(2):
        train_epoch(model, train_loader, optimizer)
        results = evaluate_model(model, test_loader, device)
        print(f"epoch {epoch}: acc={results['mean_accuracy']:.3f} loss={results['mean_loss']:.3f}")


if __name__ == "__main__":
    main()
