# source: https://github.com/pytorch/pytorch/issues/72421
# area: AMP
# bug: the "force fp32" helper disables autocast for device_type "cpu" only, so on a GPU the CUDA autocast stays on and binary_cross_entropy raises
import torch
import torch.nn as nn
import torch.nn.functional as F


def fp32_region():
    return torch.autocast(device_type="cpu", enabled=False)  # expect: any


class SimOTAAssigner:
    def __init__(self, num_classes, center_radius=2.5, topk=10):
        self.num_classes = num_classes
        self.center_radius = center_radius
        self.topk = topk

    @torch.no_grad()
    def assign(self, cls_logits, obj_logits, pred_boxes, gt_boxes, gt_labels):
        with fp32_region():
            cls_prob = cls_logits.float().sigmoid() * obj_logits.float().sigmoid()
            cls_prob = cls_prob.sqrt().unsqueeze(0).expand(gt_boxes.shape[0], -1, -1)
            gt_onehot = F.one_hot(gt_labels, self.num_classes).float()
            gt_onehot = gt_onehot.unsqueeze(1).expand(-1, cls_prob.shape[1], -1)
            cls_cost = F.binary_cross_entropy(cls_prob, gt_onehot, reduction="none").sum(-1)
            iou = box_iou(gt_boxes.float(), pred_boxes.float())
            cost = cls_cost + 3.0 * -torch.log(iou + 1e-8)
        k = min(self.topk, cost.shape[1])
        matched = cost.topk(k, dim=1, largest=False).indices[:, 0]
        return matched


def box_iou(a, b):
    lt = torch.max(a[:, None, :2], b[None, :, :2])
    rb = torch.min(a[:, None, 2:], b[None, :, 2:])
    inter = (rb - lt).clamp(min=0).prod(-1)
    area_a = (a[:, 2:] - a[:, :2]).prod(-1)
    area_b = (b[:, 2:] - b[:, :2]).prod(-1)
    return inter / (area_a[:, None] + area_b[None, :] - inter)


class TinyDetHead(nn.Module):
    def __init__(self, in_ch=16, num_classes=3, num_anchors=64):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, in_ch, 3, padding=1), nn.SiLU(), nn.AdaptiveAvgPool2d(8))
        self.cls = nn.Conv2d(in_ch, num_classes, 1)
        self.obj = nn.Conv2d(in_ch, 1, 1)
        self.reg = nn.Conv2d(in_ch, 4, 1)

    def forward(self, img):
        f = self.stem(img)
        flat = lambda t: t.flatten(2).transpose(1, 2)
        boxes = flat(self.reg(f)).sigmoid()
        xy, wh = boxes[..., :2] * 0.8, boxes[..., 2:] * 0.2 + 0.05
        return flat(self.cls(f)), flat(self.obj(f)), torch.cat([xy, xy + wh], dim=-1)


def train(device, steps=6):
    use_amp = device.type == "cuda"
    model = TinyDetHead().to(device)
    assigner = SimOTAAssigner(num_classes=3)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    scaler = torch.amp.GradScaler(device.type, enabled=use_amp)
    for step in range(steps):
        imgs = torch.rand(4, 3, 32, 32, device=device)
        gt_xy = torch.rand(4, 2, 2, device=device) * 0.6
        gt_boxes = torch.cat([gt_xy, gt_xy + 0.3], dim=-1)
        gt_labels = torch.randint(0, 3, (4, 2), device=device)
        with torch.autocast(device.type, dtype=torch.float16, enabled=use_amp):
            cls_l, obj_l, boxes = model(imgs)
            losses = []
            for b in range(imgs.shape[0]):
                idx = assigner.assign(cls_l[b], obj_l[b], boxes[b], gt_boxes[b], gt_labels[b])
                target = torch.zeros_like(cls_l[b], dtype=torch.float32)
                target[idx, gt_labels[b]] = 1.0
                obj_t = torch.zeros_like(obj_l[b], dtype=torch.float32)
                obj_t[idx] = 1.0
                losses.append(F.binary_cross_entropy_with_logits(cls_l[b], target)
                              + F.binary_cross_entropy_with_logits(obj_l[b], obj_t)
                              + F.l1_loss(boxes[b][idx], gt_boxes[b]))
            loss = torch.stack(losses).mean()
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    print("final loss", float(loss.detach()))


if __name__ == "__main__":
    train(torch.device("cuda" if torch.cuda.is_available() else "cpu"))
