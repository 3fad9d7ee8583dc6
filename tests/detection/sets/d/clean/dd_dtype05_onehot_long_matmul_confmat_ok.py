# twin of: bugs/dd_dtype05_onehot_long_matmul_confmat.py
# area: dtype
# correct: the confusion matrix is accumulated with index_add_ over flattened (target, pred) pairs, an int64 op CUDA supports (no integer GEMM, no host sync)
import torch
import torch.nn as nn
import torch.nn.functional as F


class ConfusionMatrixMetric:
    """Streaming confusion matrix kept on the model's device."""

    def __init__(self, num_classes, device):
        self.num_classes = num_classes
        self.device = device
        self.reset()

    def reset(self):
        self.mat = torch.zeros(self.num_classes, self.num_classes, dtype=torch.long, device=self.device)

    def update(self, preds, target):
        flat = target * self.num_classes + preds
        self.mat.view(-1).index_add_(0, flat, torch.ones_like(flat))

    def compute(self):
        mat = self.mat.float()
        tp = mat.diag()
        precision = tp / mat.sum(0).clamp(min=1)
        recall = tp / mat.sum(1).clamp(min=1)
        f1 = 2 * precision * recall / (precision + recall).clamp(min=1e-12)
        return {
            "accuracy": (tp.sum() / mat.sum().clamp(min=1)).item(),
            "macro_f1": f1.mean().item(),
        }


class MLP(nn.Module):
    def __init__(self, in_dim=20, hidden=64, num_classes=7):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(), nn.Linear(hidden, num_classes))

    def forward(self, x):
        return self.net(x)


def make_loader(n_batches=6, batch_size=32, in_dim=20, num_classes=7, seed=0):
    centers = torch.randn(num_classes, in_dim, generator=torch.Generator().manual_seed(1234)) * 2
    g = torch.Generator().manual_seed(seed)
    for _ in range(n_batches):
        y = torch.randint(0, num_classes, (batch_size,), generator=g)
        x = centers[y] + torch.randn(batch_size, in_dim, generator=g)
        yield x, y


def train_and_validate(device, epochs=3, lr=0.1):
    model = MLP().to(device)
    metric = ConfusionMatrixMetric(num_classes=7, device=device)
    for epoch in range(epochs):
        model.train()
        for x, y in make_loader(seed=epoch):
            x, y = x.to(device), y.to(device)
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            with torch.no_grad():
                for param in model.parameters():
                    param.add_(param.grad, alpha=-lr)
                    param.grad = None
        model.eval()
        metric.reset()
        with torch.no_grad():
            for x, y in make_loader(n_batches=4, seed=100):
                x, y = x.to(device), y.to(device)
                metric.update(model(x).argmax(dim=-1), y)
        print(f"epoch {epoch}: {metric.compute()}")


if __name__ == "__main__":
    torch.manual_seed(0)
    train_and_validate(torch.device("cuda" if torch.cuda.is_available() else "cpu"))
