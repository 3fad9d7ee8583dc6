# source: https://github.com/pytorch/pytorch/issues/49890
# area: dtype
# bug: the confusion matrix is built with a matmul of int64 one-hot tensors; CPU has an integer GEMM but CUDA does not ("addmm_cuda" not implemented for 'Long')
import torch
import torch.nn as nn
import torch.nn.functional as F


class ConfusionMatrix:
    """Accumulates a num_classes x num_classes confusion matrix on the model's device."""

    def __init__(self, num_classes, ignore_index=255, device="cpu"):
        self.num_classes = num_classes
        self.ignore_index = ignore_index
        self.mat = torch.zeros(num_classes, num_classes, dtype=torch.long, device=device)

    def update(self, logits, target):
        pred = logits.argmax(dim=1).flatten()
        target = target.flatten()
        valid = target != self.ignore_index
        target = torch.where(valid, target, torch.zeros_like(target))
        t_onehot = F.one_hot(target, self.num_classes) * valid.unsqueeze(1)
        p_onehot = F.one_hot(pred, self.num_classes)
        self.mat += t_onehot.t() @ p_onehot  # expect: any

    def compute(self):
        mat = self.mat.double()
        tp = mat.diag()
        iou = tp / (mat.sum(0) + mat.sum(1) - tp).clamp(min=1)
        acc = tp.sum() / mat.sum().clamp(min=1)
        return {"pixel_acc": acc.item(), "miou": iou.mean().item(), "iou": iou.tolist()}


class TinySegNet(nn.Module):
    def __init__(self, num_classes=4):
        super().__init__()
        self.enc = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(),
            nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(),
        )
        self.cls = nn.Conv2d(16, num_classes, 1)

    def forward(self, x):
        return self.cls(self.enc(x))


def synthetic_batches(n_batches=3, batch=4, size=32, num_classes=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    for _ in range(n_batches):
        images = torch.rand(batch, 3, size, size, generator=g)
        masks = (images[:, 0] * num_classes).long().clamp(max=num_classes - 1)
        border = torch.zeros_like(masks, dtype=torch.bool)
        border[:, :2, :] = True
        masks[border] = 255
        yield images, masks


@torch.no_grad()
def evaluate(model, loader, device, num_classes=4):
    model.eval()
    metric = ConfusionMatrix(num_classes, device=device)
    for images, masks in loader:
        images, masks = images.to(device), masks.to(device)
        metric.update(model(images), masks)
    return metric.compute()


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    model = TinySegNet().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    model.train()
    for images, masks in synthetic_batches(n_batches=4, seed=1):
        images, masks = images.to(device), masks.to(device)
        loss = F.cross_entropy(model(images), masks, ignore_index=255)
        opt.zero_grad()
        loss.backward()
        opt.step()
    stats = evaluate(model, synthetic_batches(), device)
    print(f"pixel acc {stats['pixel_acc']:.3f}  mIoU {stats['miou']:.3f}")


if __name__ == "__main__":
    main()
