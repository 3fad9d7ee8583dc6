# source: https://github.com/Lightning-AI/pytorch-lightning/issues/4408
# area: device placement
# bug: the metric modules are kept in a plain dict on the model, so model.to(device) does not move their state buffers; update() then adds GPU counts into CPU buffers and fails
import torch
import torch.nn as nn
import torch.nn.functional as F


class Metric(nn.Module):
    def reset(self):
        for name, buf in self.named_buffers():
            buf.zero_()


class Accuracy(Metric):
    def __init__(self):
        super().__init__()
        self.register_buffer("correct", torch.zeros((), dtype=torch.long))
        self.register_buffer("total", torch.zeros((), dtype=torch.long))

    def update(self, preds, target):
        self.correct += (preds == target).sum()
        self.total += target.numel()

    def compute(self):
        return self.correct.float() / self.total.clamp_min(1)


class MacroRecall(Metric):
    def __init__(self, num_classes):
        super().__init__()
        self.num_classes = num_classes
        self.register_buffer("confmat", torch.zeros(num_classes, num_classes, dtype=torch.long))

    def update(self, preds, target):
        idx = target * self.num_classes + preds
        self.confmat += torch.bincount(idx, minlength=self.num_classes ** 2).view(self.num_classes, -1)

    def compute(self):
        per_class = self.confmat.diag().float() / self.confmat.sum(1).clamp_min(1).float()
        return per_class.mean()


class TabularClassifier(nn.Module):
    def __init__(self, in_dim, num_classes):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(in_dim, 64), nn.ReLU(), nn.Linear(64, num_classes))
        self.metrics = {"acc": Accuracy(), "recall": MacroRecall(num_classes)}  # expect: any

    def forward(self, x):
        return self.body(x)

    def evaluate(self, loader, device):
        self.eval()
        for m in self.metrics.values():
            m.reset()
        with torch.no_grad():
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                preds = self(x).argmax(dim=1)
                for m in self.metrics.values():
                    m.update(preds, y)
        return {name: m.compute() for name, m in self.metrics.items()}


def make_loader(n, in_dim, num_classes, shuffle):
    centers = torch.randn(num_classes, in_dim) * 2
    y = torch.randint(0, num_classes, (n,))
    x = centers[y] + torch.randn(n, in_dim)
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=64, shuffle=shuffle)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    in_dim, num_classes = 12, 4
    torch.manual_seed(0)
    train_loader = make_loader(512, in_dim, num_classes, shuffle=True)
    torch.manual_seed(0)
    val_loader = make_loader(256, in_dim, num_classes, shuffle=False)
    model = TabularClassifier(in_dim, num_classes).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for epoch in range(3):
        model.train()
        for x, y in train_loader:
            x, y = x.to(device), y.to(device)
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        scores = model.evaluate(val_loader, device)
        print(f"epoch {epoch}: " + ", ".join(f"{k}={v.item():.3f}" for k, v in scores.items()))


if __name__ == "__main__":
    main()
