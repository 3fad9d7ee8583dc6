# source: https://github.com/LiMeng95/MultiPoseNet.pytorch/issues/6
# area: transfer & sync
# bug: the anchor grid is rebuilt in numpy and copied host-to-device on every forward pass, a blocking per-iteration transfer that stalls detection training
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def generate_anchors(base_size=16, ratios=(0.5, 1.0, 2.0), scales=(1.0, 1.26, 1.59)):
    anchors = []
    for r in ratios:
        for s in scales:
            w = base_size * s / np.sqrt(r)
            h = base_size * s * np.sqrt(r)
            anchors.append([-w / 2, -h / 2, w / 2, h / 2])
    return np.array(anchors, dtype=np.float64)


def shift(shape, stride, anchors):
    shift_x = (np.arange(0, shape[1]) + 0.5) * stride
    shift_y = (np.arange(0, shape[0]) + 0.5) * stride
    sx, sy = np.meshgrid(shift_x, shift_y)
    shifts = np.vstack((sx.ravel(), sy.ravel(), sx.ravel(), sy.ravel())).transpose()
    all_anchors = anchors[None, :, :] + shifts[:, None, :]
    return all_anchors.reshape(-1, 4)


class Anchors(nn.Module):
    def __init__(self, strides=(8, 16)):
        super().__init__()
        self.strides = strides

    def forward(self, image):
        image_shape = np.array(image.shape[2:])
        all_anchors = []
        for stride in self.strides:
            feat_shape = (image_shape + stride - 1) // stride
            all_anchors.append(shift(feat_shape, stride, generate_anchors(base_size=stride * 4)))
        all_anchors = np.concatenate(all_anchors, axis=0)
        return torch.from_numpy(all_anchors.astype(np.float32)).to(image.device)  # expect: any


class TinyRetina(nn.Module):
    def __init__(self, num_classes=1, num_anchors=9):
        super().__init__()
        self.c3 = nn.Sequential(nn.Conv2d(3, 32, 3, stride=8, padding=1), nn.ReLU())
        self.c4 = nn.Sequential(nn.Conv2d(32, 32, 3, stride=2, padding=1), nn.ReLU())
        self.cls = nn.Conv2d(32, num_anchors * num_classes, 3, padding=1)
        self.reg = nn.Conv2d(32, num_anchors * 4, 3, padding=1)
        self.anchors = Anchors()
        self.num_classes = num_classes

    def _flat(self, t, k):
        b = t.shape[0]
        return t.permute(0, 2, 3, 1).reshape(b, -1, k)

    def forward(self, img):
        p3 = self.c3(img)
        p4 = self.c4(p3)
        cls = torch.cat([self._flat(self.cls(p), self.num_classes) for p in (p3, p4)], 1)
        reg = torch.cat([self._flat(self.reg(p), 4) for p in (p3, p4)], 1)
        return cls, reg, self.anchors(img)


def detection_loss(cls, reg, anchors, gt_boxes):
    ax = (anchors[:, 0] + anchors[:, 2]) / 2
    ay = (anchors[:, 1] + anchors[:, 3]) / 2
    gx = (gt_boxes[:, 0] + gt_boxes[:, 2]) / 2
    gy = (gt_boxes[:, 1] + gt_boxes[:, 3]) / 2
    dist = (ax[None] - gx[:, None]) ** 2 + (ay[None] - gy[:, None]) ** 2
    positive = (dist < 24.0 ** 2).float()
    cls_loss = F.binary_cross_entropy_with_logits(cls.squeeze(-1), positive)
    target = (gt_boxes[:, None, :] - anchors[None]) / 64.0
    reg_loss = (F.smooth_l1_loss(reg, target, reduction="none").sum(-1) * positive).sum() / positive.sum().clamp(min=1)
    return cls_loss + reg_loss


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    model = TinyRetina().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    for it in range(10):
        imgs = torch.rand(4, 3, 128, 128, device=device)
        xy = torch.rand(4, 2, device=device) * 96
        gt = torch.cat([xy, xy + 32], dim=1)
        cls, reg, anchors = model(imgs)
        loss = detection_loss(cls, reg, anchors, gt)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print("final loss:", loss.item(), "anchors:", tuple(anchors.shape))


if __name__ == "__main__":
    main()
