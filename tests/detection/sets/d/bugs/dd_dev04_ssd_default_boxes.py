# source: https://github.com/pytorch/vision/issues/9414
# area: device placement
# bug: the per-level (w, h) default-box pairs are precomputed on the CPU in __init__ and kept in a plain list, then concatenated with grid shifts created on the feature-map (GPU) device
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class DefaultBoxGenerator(nn.Module):
    def __init__(self, aspect_ratios, min_ratio=0.2, max_ratio=0.9):
        super().__init__()
        self.aspect_ratios = aspect_ratios
        n = len(aspect_ratios)
        self.scales = [min_ratio + (max_ratio - min_ratio) * k / max(n - 1, 1) for k in range(n)] + [1.0]
        self._wh_pairs = self._generate_wh_pairs()  # expect[wh]: any

    def _generate_wh_pairs(self):
        pairs = []
        for k, ratios in enumerate(self.aspect_ratios):
            s_k = self.scales[k]
            s_prime = math.sqrt(s_k * self.scales[k + 1])
            wh = [[s_k, s_k], [s_prime, s_prime]]
            for ar in ratios:
                r = math.sqrt(ar)
                wh.extend([[s_k * r, s_k / r], [s_k / r, s_k * r]])
            pairs.append(torch.tensor(wh, dtype=torch.float32))
        return pairs

    def num_anchors_per_location(self):
        return [2 + 2 * len(r) for r in self.aspect_ratios]

    def forward(self, feature_maps):
        boxes = []
        for k, fmap in enumerate(feature_maps):
            h, w = fmap.shape[-2:]
            ys = (torch.arange(h, device=fmap.device, dtype=torch.float32) + 0.5) / h
            xs = (torch.arange(w, device=fmap.device, dtype=torch.float32) + 0.5) / w
            cy, cx = torch.meshgrid(ys, xs, indexing="ij")
            shifts = torch.stack((cx.reshape(-1), cy.reshape(-1)), dim=-1)
            wh = self._wh_pairs[k]
            n_a = wh.shape[0]
            shifts = shifts.repeat_interleave(n_a, dim=0)
            wh = wh.repeat(h * w, 1)
            boxes.append(torch.cat((shifts, wh), dim=1))  # expect[wh]: any
        return torch.cat(boxes, dim=0).clamp(0, 1)


class TinySSD(nn.Module):
    def __init__(self, num_classes=3):
        super().__init__()
        self.num_classes = num_classes
        self.stage1 = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.ReLU(), nn.Conv2d(16, 32, 3, 2, 1), nn.ReLU())
        self.stage2 = nn.Sequential(nn.Conv2d(32, 32, 3, 2, 1), nn.ReLU())
        self.anchors = DefaultBoxGenerator([[2.0], [2.0, 3.0]])
        a = self.anchors.num_anchors_per_location()
        self.cls_heads = nn.ModuleList([nn.Conv2d(32, a[0] * num_classes, 3, padding=1), nn.Conv2d(32, a[1] * num_classes, 3, padding=1)])
        self.box_heads = nn.ModuleList([nn.Conv2d(32, a[0] * 4, 3, padding=1), nn.Conv2d(32, a[1] * 4, 3, padding=1)])

    def forward(self, images):
        f1 = self.stage1(images)
        f2 = self.stage2(f1)
        feats = [f1, f2]
        b = images.shape[0]
        cls = torch.cat([h(f).permute(0, 2, 3, 1).reshape(b, -1, self.num_classes) for h, f in zip(self.cls_heads, feats)], 1)
        reg = torch.cat([h(f).permute(0, 2, 3, 1).reshape(b, -1, 4) for h, f in zip(self.box_heads, feats)], 1)
        return cls, reg, self.anchors(feats)


def decode(reg, anchors, variances=(0.1, 0.2)):
    cxcy = anchors[:, :2] + reg[..., :2] * variances[0] * anchors[:, 2:]
    wh = anchors[:, 2:] * torch.exp(reg[..., 2:] * variances[1])
    return torch.cat((cxcy - wh / 2, cxcy + wh / 2), dim=-1)


@torch.no_grad()
def detect(model, images, score_thresh=0.3):
    cls, reg, anchors = model(images)
    scores = F.softmax(cls, dim=-1)[..., 1:]
    boxes = decode(reg, anchors)
    best, labels = scores.max(dim=-1)
    keep = best > score_thresh
    return boxes, best * keep, labels + 1


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    model = TinySSD().to(device).eval()
    images = torch.rand(2, 3, 64, 64, device=device)
    boxes, scores, labels = detect(model, images)
    print(boxes.shape, scores.shape, labels.shape)
