# source: https://github.com/Lightning-AI/pytorch-lightning/issues/2274
# area: device placement
# bug: the metric base class pins its device to the CPU, so every update copies the GPU predictions back to the host (a sync per step) and computes the metric on the CPU
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class TensorMetric:
    def __init__(self, name):
        self.name = name
        self._device = torch.device("cpu")  # expect[w]: any
        self.reset()

    def reset(self):
        raise NotImplementedError

    def _to_metric_device(self, *tensors):
        return [t.detach().to(self._device) for t in tensors]  # expect[w]: any

    def __call__(self, preds, target):
        preds, target = self._to_metric_device(preds, target)
        return self.update(preds, target)


class FocalTverskyMetric(TensorMetric):
    def __init__(self, n_classes, alpha=0.7, beta=0.3, gamma=0.75, smooth=1e-6):
        self.n_classes = n_classes
        self.alpha, self.beta, self.gamma, self.smooth = alpha, beta, gamma, smooth
        super().__init__("focal_tversky")

    def reset(self):
        self.tp = torch.zeros(self.n_classes, device=self._device)
        self.fp = torch.zeros(self.n_classes, device=self._device)
        self.fn = torch.zeros(self.n_classes, device=self._device)

    def update(self, probs, target):
        c = probs.shape[1]
        p = probs.permute(0, 2, 3, 1).reshape(-1, c)
        g = F.one_hot(target.flatten(), c).float()
        self.tp += (p * g).sum(0)
        self.fp += (p * (1 - g)).sum(0)
        self.fn += ((1 - p) * g).sum(0)

    def compute(self):
        ti = (self.tp + self.smooth) / (self.tp + self.alpha * self.fn + self.beta * self.fp + self.smooth)
        return ((1 - ti) ** self.gamma).mean()


class TinySegNet(nn.Module):
    def __init__(self, n_classes):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, n_classes, 1))

    def forward(self, x):
        return self.body(x)


def synthetic_batch(n_classes, batch_size=8, size=32):
    images = torch.rand(batch_size, 3, size, size)
    target = (images[:, 0] * n_classes).long().clamp(max=n_classes - 1)
    return images, target


def train(n_classes=4, epochs=2, steps=6):
    model = TinySegNet(n_classes).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    metric = FocalTverskyMetric(n_classes)
    for epoch in range(epochs):
        metric.reset()
        for _ in range(steps):
            images, target = synthetic_batch(n_classes)
            images, target = images.to(device), target.to(device)
            logits = model(images)
            loss = F.cross_entropy(logits, target)
            opt.zero_grad()
            loss.backward()
            opt.step()
            metric(logits.softmax(dim=1), target)
        print(f"epoch {epoch}: focal tversky {metric.compute().item():.4f}")


if __name__ == "__main__":
    train()
