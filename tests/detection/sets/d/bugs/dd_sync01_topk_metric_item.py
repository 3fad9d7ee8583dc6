# source: https://github.com/pytorch/ignite/issues/240
# area: transfer & sync
# bug: the top-k accuracy metric calls .item() in update(), forcing a GPU->CPU sync on every training iteration
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class TopKAccuracy:
    """Streaming top-k accuracy, updated once per batch and read at epoch end."""

    def __init__(self, k=5):
        self.k = k
        self.reset()

    def reset(self):
        self._num_correct = 0
        self._num_examples = 0

    def update(self, logits, target):
        topk = logits.topk(self.k, dim=1).indices
        hits = (topk == target.unsqueeze(1)).any(dim=1)
        self._num_correct += hits.sum().item()  # expect: any
        self._num_examples += target.shape[0]

    def compute(self):
        return self._num_correct / max(self._num_examples, 1)


class AverageLoss:
    def __init__(self, device):
        self.device = device
        self.reset()

    def reset(self):
        self._total = torch.zeros((), device=self.device)
        self._count = 0

    def update(self, loss, n):
        self._total += loss.detach() * n
        self._count += n

    def compute(self):
        return (self._total / max(self._count, 1)).item()


def make_loader(n=1024, dim=64, classes=20, batch_size=128):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, dim, generator=g)
    y = torch.randint(0, classes, (n,), generator=g)
    return DataLoader(TensorDataset(x, y), batch_size=batch_size, shuffle=True)


def train(epochs=2):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 20)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    loader = make_loader()
    top5 = TopKAccuracy(k=5)
    avg_loss = AverageLoss(device)

    for epoch in range(epochs):
        model.train()
        top5.reset()
        avg_loss.reset()
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            logits = model(x)
            loss = criterion(logits, y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            top5.update(logits.detach(), y)
            avg_loss.update(loss, y.shape[0])
        print(f"epoch {epoch}: loss={avg_loss.compute():.4f} top5={top5.compute():.3f}")


if __name__ == "__main__":
    train()
