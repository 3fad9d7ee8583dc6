# source: https://github.com/eriklindernoren/PyTorch-YOLOv3/issues/331
# area: porting & distributed
# bug: the detector returns a 0-dim loss from forward; under nn.DataParallel on several GPUs the replicas' losses are gathered into a vector and loss.backward() fails (grad can be implicitly created only for scalar outputs)
import torch
import torch.nn as nn
import torch.nn.functional as F


class YOLOLayer(nn.Module):
    def __init__(self, in_ch, num_anchors=3, num_classes=5):
        super().__init__()
        self.na, self.nc = num_anchors, num_classes
        self.pred = nn.Conv2d(in_ch, num_anchors * (5 + num_classes), 1)

    def forward(self, x):
        b, _, h, w = x.shape
        return self.pred(x).view(b, self.na, 5 + self.nc, h, w).permute(0, 1, 3, 4, 2)


class TinyDarknet(nn.Module):
    def __init__(self, num_classes=5):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.LeakyReLU(0.1),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.LeakyReLU(0.1),
            nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.BatchNorm2d(64), nn.LeakyReLU(0.1),
        )
        self.head = YOLOLayer(64, num_classes=num_classes)

    def compute_loss(self, preds, targets):
        # targets: (B, A, H, W, 5 + C) dense grid with objectness in channel 4
        obj = targets[..., 4:5]
        num_obj = obj.sum().clamp(min=1.0)
        loss_obj = F.binary_cross_entropy_with_logits(preds[..., 4], targets[..., 4])
        box_err = (preds[..., :4].sigmoid() - targets[..., :4]).pow(2) * obj
        cls_err = F.binary_cross_entropy_with_logits(preds[..., 5:], targets[..., 5:], reduction="none") * obj
        loss_box = box_err.sum() / (4 * num_obj)
        loss_cls = cls_err.sum() / (preds.shape[-1] - 5) / num_obj
        return loss_obj + 5.0 * loss_box + loss_cls

    def forward(self, images, targets=None):
        preds = self.head(self.backbone(images))
        if targets is None:
            return preds
        return self.compute_loss(preds, targets), preds


def make_targets(batch, grid=8, anchors=3, num_classes=5, generator=None):
    t = torch.zeros(batch, anchors, grid, grid, 5 + num_classes)
    for b in range(batch):
        for _ in range(3):
            a, gy, gx = (int(torch.randint(n, (1,), generator=generator)) for n in (anchors, grid, grid))
            t[b, a, gy, gx, :4] = torch.rand(4, generator=generator)
            t[b, a, gy, gx, 4] = 1.0
            t[b, a, gy, gx, 5 + int(torch.randint(num_classes, (1,), generator=generator))] = 1.0
    return t


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    model = TinyDarknet().to(device)
    if torch.cuda.device_count() > 1:
        model = nn.DataParallel(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(1)

    model.train()
    total = torch.zeros((), device=device)
    steps = 10
    for step in range(steps):
        imgs = torch.rand(8, 3, 32, 32, generator=gen).to(device)
        targets = make_targets(8, generator=gen).to(device)
        loss, _ = model(imgs, targets)  # expect[w]: any
        optimizer.zero_grad(set_to_none=True)
        loss.backward()  # expect[w]: any
        optimizer.step()
        total += loss.detach()
    print(f"mean training loss over {steps} steps: {(total / steps).item():.4f}")


if __name__ == "__main__":
    main()
