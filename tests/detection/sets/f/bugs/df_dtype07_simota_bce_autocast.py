# source: https://github.com/Megvii-BaseDetection/YOLOX/issues/336
# area: dtype
# bug: the label-assignment cost uses F.binary_cross_entropy on sigmoid scores inside the fp16 autocast region that is only enabled on CUDA, where autocast rejects it as unsafe and raises
import torch
import torch.nn as nn
import torch.nn.functional as F


def box_iou(a, b):
    lt = torch.max(a[:, None, :2], b[None, :, :2])
    rb = torch.min(a[:, None, 2:], b[None, :, 2:])
    inter = (rb - lt).clamp(min=0).prod(-1)
    area_a = (a[:, 2:] - a[:, :2]).prod(-1)
    area_b = (b[:, 2:] - b[:, :2]).prod(-1)
    return inter / (area_a[:, None] + area_b[None, :] - inter + 1e-7)


class AnchorFreeHead(nn.Module):
    def __init__(self, num_classes=3, stride=8):
        super().__init__()
        self.num_classes, self.stride = num_classes, stride
        self.stem = nn.Sequential(nn.Conv2d(3, 32, 3, stride, 1), nn.SiLU(), nn.Conv2d(32, 32, 3, 1, 1), nn.SiLU())
        self.reg = nn.Conv2d(32, 4, 1)
        self.obj = nn.Conv2d(32, 1, 1)
        self.cls = nn.Conv2d(32, num_classes, 1)

    def forward(self, x):
        f = self.stem(x)
        b, _, h, w = f.shape
        ys, xs = torch.meshgrid(torch.arange(h, device=x.device), torch.arange(w, device=x.device), indexing="ij")
        centers = (torch.stack([xs, ys], -1).reshape(-1, 2).float() + 0.5) * self.stride
        wh = self.reg(f).flatten(2).transpose(1, 2)[..., 2:].exp() * self.stride
        boxes = torch.cat([centers - wh / 2, centers + wh / 2], dim=-1)
        return boxes, self.obj(f).flatten(2).transpose(1, 2), self.cls(f).flatten(2).transpose(1, 2)


def assign_and_loss(boxes, obj_logits, cls_logits, gt_boxes, gt_labels, num_classes, topk=5):
    iou = box_iou(gt_boxes, boxes)
    gt_onehot = F.one_hot(gt_labels, num_classes).float()
    n_gt, n_pred = iou.shape
    scores = (cls_logits.float().sigmoid() * obj_logits.float().sigmoid()).sqrt()
    pair_cls_cost = F.binary_cross_entropy(  # expect: any
        scores.unsqueeze(0).expand(n_gt, n_pred, num_classes),
        gt_onehot.unsqueeze(1).expand(n_gt, n_pred, num_classes),
        reduction="none",
    ).sum(-1)
    cost = pair_cls_cost + 3.0 * (-torch.log(iou + 1e-8))
    match = torch.zeros_like(cost)
    k = min(topk, n_pred)
    match.scatter_(1, cost.topk(k, dim=1, largest=False).indices, 1.0)
    fg = match.sum(0) > 0
    gt_idx = match.argmax(0)
    obj_target = fg.float().unsqueeze(-1)
    loss_obj = F.binary_cross_entropy_with_logits(obj_logits, obj_target.to(obj_logits.dtype), reduction="sum")
    cls_target = gt_onehot[gt_idx] * iou.max(0).values.unsqueeze(-1).detach()
    loss_cls = F.binary_cross_entropy_with_logits(cls_logits, cls_target.to(cls_logits.dtype), reduction="none")
    loss_iou = 1.0 - iou[gt_idx, torch.arange(n_pred, device=iou.device)] ** 2
    num_fg = fg.sum().clamp(min=1)
    return (loss_obj + (loss_cls.sum(-1) * fg).sum() + 5.0 * (loss_iou * fg).sum()) / num_fg


def synthetic_batch(batch=2, size=64, num_classes=3, generator=None):
    images = torch.rand(batch, 3, size, size, generator=generator)
    targets = []
    for _ in range(batch):
        xy = torch.rand(2, 2, generator=generator) * (size - 24)
        wh = 8 + torch.rand(2, 2, generator=generator) * 16
        targets.append((torch.cat([xy, xy + wh], -1), torch.randint(0, num_classes, (2,), generator=generator)))
    return images, targets


def train(steps=3):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = device.type == "cuda"
    gen = torch.Generator().manual_seed(0)
    model = AnchorFreeHead().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    scaler = torch.amp.GradScaler(device.type, enabled=use_amp)
    for step in range(steps):
        images, targets = synthetic_batch(generator=gen)
        images = images.to(device)
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
            boxes, obj, cls = model(images)
            loss = sum(
                assign_and_loss(boxes[i], obj[i], cls[i], gb.to(device), gl.to(device), model.num_classes)
                for i, (gb, gl) in enumerate(targets)
            ) / len(targets)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    print("final loss", float(loss.detach()))


if __name__ == "__main__":
    train()
