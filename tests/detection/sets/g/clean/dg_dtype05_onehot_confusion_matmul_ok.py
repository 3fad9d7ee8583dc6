# twin of: bugs/dg_dtype05_onehot_confusion_matmul.py
# area: dtype
# correct: the one-hot factors are cast to float before the matmul (exact for 0/1 counts) and the result is added back as int64, which CUDA supports
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class ConfusionMatrixMeter:
    def __init__(self, num_classes, device):
        self.num_classes = num_classes
        self.matrix = torch.zeros(num_classes, num_classes, dtype=torch.long, device=device)

    def reset(self):
        self.matrix.zero_()

    @torch.no_grad()
    def update(self, logits, target):
        preds = logits.argmax(dim=1)
        target_oh = F.one_hot(target, self.num_classes).float()
        preds_oh = F.one_hot(preds, self.num_classes).float()
        self.matrix += (target_oh.t() @ preds_oh).long()

    def compute(self):
        m = self.matrix.double()
        tp = m.diag()
        precision = tp / m.sum(dim=0).clamp_min(1)
        recall = tp / m.sum(dim=1).clamp_min(1)
        f1 = 2 * precision * recall / (precision + recall).clamp_min(1e-12)
        return {
            "accuracy": (tp.sum() / m.sum().clamp_min(1)).item(),
            "macro_f1": f1.mean().item(),
        }


class MLPClassifier(nn.Module):
    def __init__(self, in_dim=20, hidden=64, num_classes=5):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(), nn.Linear(hidden, num_classes))

    def forward(self, x):
        return self.net(x)


def make_split(n, seed, num_classes=5):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 20, generator=g)
    y = (x[:, :num_classes].argmax(dim=1) + (x[:, -1] > 1.5).long()) % num_classes
    return TensorDataset(x, y)


def evaluate(model, loader, meter, device):
    model.eval()
    meter.reset()
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        meter.update(model(x), y)
    return meter.compute()


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train_loader = DataLoader(make_split(512, 0), batch_size=64, shuffle=True)
    val_loader = DataLoader(make_split(256, 1), batch_size=64)
    model = MLPClassifier().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    meter = ConfusionMatrixMeter(5, device)
    for epoch in range(3):
        model.train()
        for x, y in train_loader:
            x, y = x.to(device), y.to(device)
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        stats = evaluate(model, val_loader, meter, device)
        print(f"epoch {epoch}: acc={stats['accuracy']:.3f} macro_f1={stats['macro_f1']:.3f}")


if __name__ == "__main__":
    main()
