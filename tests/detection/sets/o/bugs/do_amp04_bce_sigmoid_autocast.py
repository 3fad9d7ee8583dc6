# source: https://github.com/open-mmlab/mmdetection/issues/10203
# area: AMP
# bug: the quality focal loss feeds sigmoid probabilities to F.binary_cross_entropy inside the autocast region, which raises "unsafe to autocast" on the GPU
import torch
import torch.nn as nn
import torch.nn.functional as F


class QualityFocalLoss(nn.Module):
    def __init__(self, beta=2.0, activated=True, loss_weight=1.0):
        super().__init__()
        self.beta = beta
        self.activated = activated
        self.loss_weight = loss_weight

    def forward(self, pred, score_target):
        prob = pred if self.activated else pred.sigmoid()
        scale = (prob - score_target).abs().pow(self.beta)
        loss = F.binary_cross_entropy(prob, score_target, reduction="none") * scale  # expect: any
        return self.loss_weight * loss.sum() / score_target.sum().clamp(min=1.0)


class TaskAlignedHead(nn.Module):
    def __init__(self, in_ch=32, num_classes=5):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(in_ch, in_ch, 3, padding=1), nn.GroupNorm(8, in_ch), nn.ReLU())
        self.cls_conv = nn.Conv2d(in_ch, num_classes, 3, padding=1)
        self.reg_conv = nn.Conv2d(in_ch, 4, 3, padding=1)
        self.loss_cls = QualityFocalLoss(activated=True)

    def forward(self, feat):
        x = self.stem(feat)
        cls_score = self.cls_conv(x).sigmoid()
        bbox_pred = F.relu(self.reg_conv(x))
        return cls_score, bbox_pred

    def loss(self, feat, cls_target, box_target):
        cls_score, bbox_pred = self(feat)
        loss_cls = self.loss_cls(cls_score, cls_target)
        pos = cls_target.amax(dim=1, keepdim=True) > 0
        loss_bbox = F.smooth_l1_loss(bbox_pred * pos, box_target * pos)
        return {"loss_cls": loss_cls, "loss_bbox": loss_bbox}


class TinyDetector(nn.Module):
    def __init__(self, num_classes=5):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 32, 3, stride=2, padding=1), nn.ReLU(),
                                      nn.Conv2d(32, 32, 3, stride=2, padding=1), nn.ReLU())
        self.bbox_head = TaskAlignedHead(32, num_classes)

    def forward_train(self, img, cls_target, box_target):
        return self.bbox_head.loss(self.backbone(img), cls_target, box_target)


def synthetic_batch(device, n=4, num_classes=5):
    img = torch.rand(n, 3, 64, 64, device=device)
    cls_target = torch.zeros(n, num_classes, 16, 16, device=device)
    cls_target[:, 1, 4:8, 4:8] = torch.rand(n, 4, 4, device=device)
    box_target = torch.rand(n, 4, 16, 16, device=device) * 8
    return img, cls_target, box_target


def run(iters=10, amp=True):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = amp and device.type == "cuda"
    model = TinyDetector().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    history = torch.zeros(iters, device=device)
    for i in range(iters):
        img, cls_t, box_t = synthetic_batch(device)
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
            losses = model.forward_train(img, cls_t, box_t)
            total = sum(losses.values())
        scaler.scale(total).backward()
        scaler.step(optimizer)
        scaler.update()
        history[i] = total.detach()
    print("final loss", history[-1].item())


if __name__ == "__main__":
    run()
