# source: https://github.com/RangiLyu/nanodet/pull/476
# area: AMP
# bug: the soft-label assigner builds its classification cost with F.binary_cross_entropy on sigmoid scores inside the fp16 autocast region; on a GPU autocast rejects it ("binary_cross_entropy ... unsafe to autocast")
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
USE_AMP = device.type == "cuda"


def box_iou(a, b):
    area_a = (a[:, 2] - a[:, 0]).clamp(min=0) * (a[:, 3] - a[:, 1]).clamp(min=0)
    area_b = (b[:, 2] - b[:, 0]).clamp(min=0) * (b[:, 3] - b[:, 1]).clamp(min=0)
    lt = torch.max(a[:, None, :2], b[None, :, :2])
    rb = torch.min(a[:, None, 2:], b[None, :, 2:])
    inter = (rb - lt).clamp(min=0).prod(-1)
    return inter / (area_a[:, None] + area_b[None, :] - inter + 1e-6)


class SoftLabelAssigner:
    """Assigns each ground-truth box to the prior with the lowest combined cls + IoU cost."""

    def __init__(self, iou_weight=3.0):
        self.iou_weight = iou_weight

    @torch.no_grad()
    def assign(self, cls_logits, pred_boxes, gt_boxes, gt_labels):
        num_classes = cls_logits.shape[1]
        ious = box_iou(pred_boxes, gt_boxes)  # [P, G]
        iou_cost = -torch.log(ious + 1e-7)
        onehot = F.one_hot(gt_labels, num_classes).float()  # [G, C]
        soft_label = onehot[None, :, :] * ious[..., None]  # [P, G, C]
        scores = cls_logits.sigmoid()[:, None, :].expand_as(soft_label)
        cls_cost = F.binary_cross_entropy(scores, soft_label, reduction="none").sum(-1)  # expect: any
        cost = cls_cost + self.iou_weight * iou_cost
        matched = cost.argmin(dim=0)  # best prior per gt
        targets = torch.zeros_like(cls_logits)
        gt_idx = torch.arange(len(gt_labels), device=ious.device)
        targets[matched, gt_labels] = ious[matched, gt_idx].to(targets.dtype)
        return matched, targets


class TinyDetHead(nn.Module):
    def __init__(self, num_priors=64, feat=32, num_classes=4):
        super().__init__()
        self.num_priors = num_priors
        self.backbone = nn.Sequential(nn.Linear(feat, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU())
        self.cls = nn.Linear(128, num_priors * num_classes)
        self.reg = nn.Linear(128, num_priors * 4)
        self.num_classes = num_classes

    def forward(self, x):
        h = self.backbone(x)
        cls = self.cls(h).view(-1, self.num_priors, self.num_classes)
        xy = self.reg(h).view(-1, self.num_priors, 4).sigmoid()
        boxes = torch.cat([xy[..., :2] * 0.5, xy[..., :2] * 0.5 + 0.1 + xy[..., 2:] * 0.4], dim=-1)
        return cls, boxes


def compute_loss(model, assigner, feats, gts):
    cls, boxes = model(feats)
    total = 0.0
    for i, (gt_boxes, gt_labels) in enumerate(gts):
        matched, targets = assigner.assign(cls[i], boxes[i], gt_boxes, gt_labels)
        cls_loss = F.binary_cross_entropy_with_logits(cls[i], targets, reduction="sum")
        reg_loss = (1.0 - box_iou(boxes[i][matched], gt_boxes).diagonal()).sum()
        total = total + (cls_loss + 2.0 * reg_loss) / max(len(gt_labels), 1)
    return total / len(gts)


def synthetic_batch(gen, batch=4, feat=32):
    feats = torch.randn(batch, feat, generator=gen).to(device)
    gts = []
    for _ in range(batch):
        n = int(torch.randint(1, 4, (1,), generator=gen))
        xy = torch.rand(n, 2, generator=gen) * 0.5
        wh = 0.1 + torch.rand(n, 2, generator=gen) * 0.4
        gts.append((torch.cat([xy, xy + wh], 1).to(device), torch.randint(0, 4, (n,), generator=gen).to(device)))
    return feats, gts


if __name__ == "__main__":
    gen = torch.Generator().manual_seed(0)
    model, assigner = TinyDetHead().to(device), SoftLabelAssigner()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    scaler = torch.amp.GradScaler("cuda", enabled=USE_AMP)
    for step in range(5):
        feats, gts = synthetic_batch(gen)
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=USE_AMP):
            loss = compute_loss(model, assigner, feats, gts)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    print("final loss", float(loss.detach()))
