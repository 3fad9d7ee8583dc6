# source: https://github.com/pytorch/pytorch/pull/65133
# area: dtype
# bug: the confusion matrix is accumulated with a matmul of int64 one-hot tensors, which works on CPU but has no CUDA kernel ("addmm_cuda" not implemented for 'Long')
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class SegmentationMeter:
    """Accumulates a confusion matrix over an evaluation run and reports IoU."""

    def __init__(self, num_classes, ignore_index=255, device="cpu"):
        self.num_classes = num_classes
        self.ignore_index = ignore_index
        self.confusion = torch.zeros(num_classes, num_classes, dtype=torch.long, device=device)

    def reset(self):
        self.confusion.zero_()

    @torch.no_grad()
    def update(self, logits, target):
        pred = logits.argmax(dim=1).reshape(-1)
        target = target.reshape(-1)
        valid = (target != self.ignore_index).unsqueeze(1)
        t_onehot = F.one_hot(target.clamp(max=self.num_classes - 1), self.num_classes) * valid
        p_onehot = F.one_hot(pred, self.num_classes)
        self.confusion += t_onehot.t() @ p_onehot  # expect: any

    def compute(self):
        cm = self.confusion.float()
        inter = cm.diag()
        union = cm.sum(0) + cm.sum(1) - inter
        iou = inter / union.clamp(min=1)
        pixel_acc = inter.sum() / cm.sum().clamp(min=1)
        return {"miou": iou.mean(), "pixel_acc": pixel_acc, "per_class": iou}


class TinySegNet(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(),
            nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(),
            nn.Conv2d(16, num_classes, 1),
        )

    def forward(self, x):
        return self.body(x)


def synthetic_batches(n_batches, batch_size, num_classes, size=32):
    g = torch.Generator().manual_seed(0)
    for _ in range(n_batches):
        images = torch.randn(batch_size, 3, size, size, generator=g)
        masks = torch.randint(0, num_classes, (batch_size, size, size), generator=g)
        masks[:, :2, :] = 255
        yield images, masks


@torch.no_grad()
def evaluate(model, batches, meter):
    model.eval()
    meter.reset()
    for images, masks in batches:
        images = images.to(device)
        masks = masks.to(device)
        logits = model(images)
        meter.update(logits, masks)
    return meter.compute()


def main():
    torch.manual_seed(0)
    num_classes = 6
    model = TinySegNet(num_classes).to(device)
    meter = SegmentationMeter(num_classes, device=device)
    stats = evaluate(model, synthetic_batches(8, 4, num_classes), meter)
    per_class = stats["per_class"].cpu().tolist()
    print(f"mIoU {stats['miou'].item():.4f}  pixel acc {stats['pixel_acc'].item():.4f}")
    print("per-class IoU:", [round(v, 3) for v in per_class])


if __name__ == "__main__":
    main()
