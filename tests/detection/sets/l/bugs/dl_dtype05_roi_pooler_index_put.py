# source: https://github.com/pytorch/vision/pull/2384
# area: dtype
# bug: under CUDA autocast the feature maps are float16 (so is the result buffer) but grid_sample is promoted to float32; the indexed assignment result[idx] = pooled then fails with "Index put requires the source and destination dtypes match"
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class TinyFPN(nn.Module):
    def __init__(self, ch=32):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, ch, 3, stride=2, padding=1), nn.ReLU())
        self.down1 = nn.Sequential(nn.Conv2d(ch, ch, 3, stride=2, padding=1), nn.ReLU())
        self.down2 = nn.Sequential(nn.Conv2d(ch, ch, 3, stride=2, padding=1), nn.ReLU())

    def forward(self, x):
        p2 = self.stem(x)
        p3 = self.down1(p2)
        p4 = self.down2(p3)
        return [p2, p3, p4]


class MultiScaleRoIPool(nn.Module):
    def __init__(self, output_size=7, strides=(2, 4, 8), canonical_size=64):
        super().__init__()
        self.output_size = output_size
        self.strides = strides
        self.canonical = canonical_size

    def map_levels(self, boxes):
        area = (boxes[:, 2] - boxes[:, 0]).clamp_min(1) * (boxes[:, 3] - boxes[:, 1]).clamp_min(1)
        lvl = torch.floor(1 + torch.log2(area.sqrt() / self.canonical + 1e-6))
        return lvl.clamp(0, len(self.strides) - 1).long()

    def sample(self, feat, rois, stride):
        n = rois.shape[0]
        h, w = feat.shape[-2:]
        x1, y1, x2, y2 = (rois[:, i] / stride for i in range(1, 5))
        theta = torch.zeros(n, 2, 3, device=rois.device, dtype=rois.dtype)
        theta[:, 0, 0] = (x2 - x1) / w
        theta[:, 0, 2] = (x1 + x2) / w - 1
        theta[:, 1, 1] = (y2 - y1) / h
        theta[:, 1, 2] = (y1 + y2) / h - 1
        grid = F.affine_grid(theta, (n, feat.shape[1], self.output_size, self.output_size), align_corners=False)
        return F.grid_sample(feat[rois[:, 0].long()], grid, align_corners=False)

    def forward(self, feats, rois):
        levels = self.map_levels(rois[:, 1:])
        c = feats[0].shape[1]
        result = feats[0].new_zeros((rois.shape[0], c, self.output_size, self.output_size))
        for lvl, (feat, stride) in enumerate(zip(feats, self.strides)):
            idx = torch.nonzero(levels == lvl).squeeze(1)
            if idx.numel() == 0:
                continue
            pooled = self.sample(feat, rois[idx], stride)
            result[idx] = pooled  # expect: any
        return result


class RoIHead(nn.Module):
    def __init__(self, ch=32, num_classes=6):
        super().__init__()
        self.backbone = TinyFPN(ch)
        self.pool = MultiScaleRoIPool()
        self.fc = nn.Sequential(nn.Flatten(), nn.Linear(ch * 49, 128), nn.ReLU(), nn.Linear(128, num_classes))

    def forward(self, images, rois):
        return self.fc(self.pool(self.backbone(images), rois))


def random_rois(batch, n_per_image, size, device):
    xy = torch.rand(batch * n_per_image, 2, device=device) * (size - 40)
    wh = 8 + torch.rand(batch * n_per_image, 2, device=device) * (size / 2)
    boxes = torch.cat([xy, (xy + wh).clamp(max=size - 1)], dim=1)
    bidx = torch.arange(batch, device=device).repeat_interleave(n_per_image).float()
    return torch.cat([bidx[:, None], boxes], dim=1)


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = device.type == "cuda"
    model = RoIHead().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    for step in range(2):
        images = torch.randn(2, 3, 96, 96, device=device)
        rois = random_rois(2, 16, 96, device)
        labels = torch.randint(0, 6, (rois.shape[0],), device=device)
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
            loss = F.cross_entropy(model(images, rois), labels)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    print(f"final loss {loss.item():.4f}, log-classes {math.log(6):.4f}")


if __name__ == "__main__":
    main()
