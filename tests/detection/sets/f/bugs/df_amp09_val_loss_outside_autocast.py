# source: https://github.com/huggingface/pytorch-image-models/pull/1586
# area: AMP
# bug: validate() leaves the autocast block before computing the loss, so on a GPU cross-entropy runs directly on float16 logits instead of being autocast to float32
from contextlib import nullcontext
from functools import partial
import torch
import torch.nn as nn
import torch.nn.functional as F


class AverageMeter:
    def __init__(self, device):
        self.sum = torch.zeros((), device=device)
        self.count = 0

    def update(self, value, n):
        self.sum += value.detach() * n
        self.count += n

    @property
    def avg(self):
        return (self.sum / max(self.count, 1)).item()


class SmallResNet(nn.Module):
    def __init__(self, num_classes=100, width=32):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU())
        self.block = nn.Sequential(nn.Conv2d(width, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(),
                                   nn.Conv2d(width, width, 3, padding=1), nn.BatchNorm2d(width))
        self.fc = nn.Linear(width, num_classes)

    def forward(self, x):
        h = self.stem(x)
        h = F.relu(h + self.block(h))
        return self.fc(F.adaptive_avg_pool2d(h, 1).flatten(1))


def accuracy(output, target, topk=(1, 5)):
    maxk = max(topk)
    _, pred = output.topk(maxk, 1, True, True)
    correct = pred.t().eq(target.reshape(1, -1).expand_as(pred.t()))
    return [correct[:k].reshape(-1).float().sum() * (100.0 / target.size(0)) for k in topk]


def validate(model, loader, loss_fn, device, amp_autocast=nullcontext):
    model.eval()
    losses, top1, top5 = AverageMeter(device), AverageMeter(device), AverageMeter(device)
    with torch.no_grad():
        for images, target in loader:
            images, target = images.to(device), target.to(device)
            with amp_autocast():
                output = model(images)
            loss = loss_fn(output, target)  # expect: any
            acc1, acc5 = accuracy(output, target)
            n = images.size(0)
            losses.update(loss, n)
            top1.update(acc1, n)
            top5.update(acc5, n)
    return {"loss": losses.avg, "top1": top1.avg, "top5": top5.avg}


def make_loader(n_batches=6, batch_size=32, num_classes=100):
    g = torch.Generator().manual_seed(0)
    return [(torch.randn(batch_size, 3, 32, 32, generator=g), torch.randint(0, num_classes, (batch_size,), generator=g))
            for _ in range(n_batches)]


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = device.type == "cuda"
    amp_autocast = partial(torch.autocast, device_type=device.type, dtype=torch.float16) if use_amp else nullcontext
    model = SmallResNet().to(device)
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1).to(device)
    metrics = validate(model, make_loader(), loss_fn, device, amp_autocast)
    print({k: round(v, 3) for k, v in metrics.items()})


if __name__ == "__main__":
    main()
