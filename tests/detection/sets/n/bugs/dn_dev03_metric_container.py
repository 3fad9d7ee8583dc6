# source: https://github.com/gradsflow/gradsflow-automl/issues/105
# area: device placement
# bug: the fit loop moves the learner to the GPU but the metric container (with its buffer states) stays on the CPU, so update() mixes devices
import torch
import torch.nn as nn
import torch.nn.functional as F


class ConfusionMatrix(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.num_classes = num_classes
        self.register_buffer("confmat", torch.zeros(num_classes, num_classes, dtype=torch.long))

    def update(self, preds, target):
        idx = target * self.num_classes + preds.argmax(dim=1)
        counts = torch.bincount(idx, minlength=self.num_classes ** 2)
        self.confmat += counts.reshape(self.num_classes, self.num_classes)

    def compute(self):
        cm = self.confmat.float()
        return {"accuracy": cm.diag().sum() / cm.sum().clamp(min=1),
                "recall": (cm.diag() / cm.sum(dim=1).clamp(min=1)).mean()}

    def reset(self):
        self.confmat.zero_()


class MetricsContainer(nn.Module):
    def __init__(self, metrics):
        super().__init__()
        self._metrics = nn.ModuleDict(metrics)

    def update(self, preds, target):
        for metric in self._metrics.values():
            metric.update(preds, target)

    def compute(self):
        out = {}
        for name, metric in self._metrics.items():
            out.update({f"{name}/{k}": v for k, v in metric.compute().items()})
        return out

    def reset(self):
        for metric in self._metrics.values():
            metric.reset()


class Model:
    def __init__(self, learner, num_classes, device=None):
        self.device = device or torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.learner = learner.to(self.device)
        self.metrics = MetricsContainer({"cm": ConfusionMatrix(num_classes)})  # expect[w]: any
        self.optimizer = torch.optim.Adam(self.learner.parameters(), lr=1e-3)

    def train_step(self, inputs, target):
        self.optimizer.zero_grad()
        logits = self.learner(inputs)
        loss = F.cross_entropy(logits, target)
        loss.backward()
        self.optimizer.step()
        self.metrics.update(logits.detach(), target)  # expect[w]: any
        return loss.detach()

    def fit(self, batches, max_epochs=2):
        for epoch in range(max_epochs):
            self.metrics.reset()
            running = torch.zeros((), device=self.device)
            for inputs, target in batches:
                running += self.train_step(inputs.to(self.device), target.to(self.device))
            summary = {k: round(v.item(), 3) for k, v in self.metrics.compute().items()}
            print(f"epoch {epoch}: loss {running.item() / len(batches):.4f} {summary}")


def main():
    torch.manual_seed(0)
    learner = nn.Sequential(nn.Flatten(), nn.Linear(28 * 28, 64), nn.ReLU(), nn.Linear(64, 10))
    batches = [(torch.randn(32, 1, 28, 28), torch.randint(0, 10, (32,))) for _ in range(8)]
    model = Model(learner, num_classes=10)
    model.fit(batches, max_epochs=2)


if __name__ == "__main__":
    main()
