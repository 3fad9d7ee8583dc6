# source: https://github.com/pytorch/ignite/pull/1232
# area: device placement
# bug: the metric's device defaults to None, so its confusion-matrix accumulator lives on the CPU and .to(None) leaves the CUDA batch counts where they are before the in-place add
import torch
import torch.nn as nn


class ConfusionMatrix:
    def __init__(self, num_classes, ignore_index=255, device=None):
        self.num_classes = num_classes
        self.ignore_index = ignore_index
        self._device = device
        self.reset()

    def reset(self):
        n = self.num_classes
        self._cm = torch.zeros(n, n, dtype=torch.int64, device=self._device)
        self._num_examples = 0

    @torch.no_grad()
    def update(self, logits, target):
        pred = logits.argmax(dim=1).flatten()
        target = target.flatten()
        n2 = self.num_classes ** 2
        idx = torch.where(target != self.ignore_index, target * self.num_classes + pred, n2)
        counts = torch.zeros(n2 + 1, dtype=torch.int64, device=idx.device)
        counts = counts.scatter_add_(0, idx, torch.ones_like(idx))[:n2]
        self._cm += counts.reshape(self.num_classes, self.num_classes).to(self._device)  # expect[cm]: any
        self._num_examples += logits.shape[0]

    def compute_iou(self):
        cm = self._cm.double()
        inter = cm.diag()
        union = cm.sum(0) + cm.sum(1) - inter
        return inter / union.clamp(min=1)

    def compute_pixel_accuracy(self):
        return (self._cm.diag().sum().double() / self._cm.sum().clamp(min=1)).item()


class TinySegNet(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(),
                                     nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU())
        self.decoder = nn.Sequential(nn.ConvTranspose2d(32, 16, 2, stride=2), nn.ReLU(),
                                     nn.Conv2d(16, num_classes, 1))

    def forward(self, x):
        return self.decoder(self.encoder(x))


def synthetic_val_batches(num_batches, num_classes, device, size=64):
    g = torch.Generator().manual_seed(0)
    for _ in range(num_batches):
        images = torch.rand(4, 3, size, size, generator=g)
        masks = (images[:, 0] * num_classes).long().clamp(max=num_classes - 1)
        masks[:, :4, :] = 255
        yield images.to(device), masks.to(device)


class SegEvaluator:
    def __init__(self, model, num_classes, device):
        self.model = model
        self.device = device
        self.metric = ConfusionMatrix(num_classes)  # expect[cm]: any

    @torch.no_grad()
    def run(self, batches):
        self.model.eval()
        self.metric.reset()
        for images, masks in batches:
            self.metric.update(self.model(images), masks)
        iou = self.metric.compute_iou()
        return {"mIoU": iou.mean().item(), "pixel_acc": self.metric.compute_pixel_accuracy(),
                "per_class": [round(v, 3) for v in iou.tolist()]}


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    num_classes = 5
    model = TinySegNet(num_classes).to(device)
    evaluator = SegEvaluator(model, num_classes, device)
    report = evaluator.run(synthetic_val_batches(6, num_classes, device))
    print(report)
