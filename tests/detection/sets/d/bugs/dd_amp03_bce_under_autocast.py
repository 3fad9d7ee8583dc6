# source: https://github.com/VCasecnikovs/Yet-Another-YOLOv4-Pytorch/issues/6
# area: AMP
# bug: objectness loss applies F.binary_cross_entropy to sigmoid outputs inside the autocast region; on CUDA autocast rejects it ("binary_cross_entropy ... unsafe to autocast") and training crashes
import torch
import torch.nn as nn
import torch.nn.functional as F


class DetectionHead(nn.Module):
    def __init__(self, in_ch=32, num_anchors=3, num_classes=4):
        super().__init__()
        self.na, self.nc = num_anchors, num_classes
        self.backbone = nn.Sequential(
            nn.Conv2d(3, in_ch, 3, 2, 1), nn.BatchNorm2d(in_ch), nn.SiLU(),
            nn.Conv2d(in_ch, in_ch, 3, 2, 1), nn.BatchNorm2d(in_ch), nn.SiLU(),
        )
        self.pred = nn.Conv2d(in_ch, num_anchors * (5 + num_classes), 1)

    def forward(self, images):
        p = self.pred(self.backbone(images))
        b, _, h, w = p.shape
        return p.view(b, self.na, 5 + self.nc, h, w).permute(0, 1, 3, 4, 2)


class YoloLoss(nn.Module):
    def __init__(self, obj_weight=1.0, noobj_weight=0.5):
        super().__init__()
        self.obj_weight = obj_weight
        self.noobj_weight = noobj_weight

    def forward(self, pred, target_obj, target_box, target_cls):
        obj = target_obj
        noobj = 1.0 - target_obj
        n_obj = obj.sum().clamp(min=1.0)
        n_noobj = noobj.sum().clamp(min=1.0)
        conf = torch.sigmoid(pred[..., 4])
        bce = F.binary_cross_entropy(conf, target_obj, reduction="none")  # expect: any
        loss_obj = (bce * obj).sum() / n_obj
        loss_noobj = (bce * noobj).sum() / n_noobj
        box_err = (pred[..., :4] - target_box).pow(2).mean(-1)
        loss_box = (box_err * obj).sum() / n_obj
        nc = pred.shape[-1] - 5
        ce = F.cross_entropy(pred[..., 5:].reshape(-1, nc), target_cls.reshape(-1), reduction="none")
        loss_cls = (ce.view_as(obj) * obj).sum() / n_obj
        return loss_box + loss_cls + self.obj_weight * loss_obj + self.noobj_weight * loss_noobj


def synthetic_targets(pred_shape, device, num_classes=4):
    b, a, h, w, _ = pred_shape
    target_obj = (torch.rand(b, a, h, w, device=device) < 0.1).float()
    target_obj[0, 0, 0, 0] = 1.0
    target_box = torch.rand(b, a, h, w, 4, device=device)
    target_cls = torch.randint(0, num_classes, (b, a, h, w), device=device)
    return target_obj, target_box, target_cls


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = device.type == "cuda"
    model = DetectionHead().to(device)
    criterion = YoloLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.937, nesterov=True)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    history = []
    for it in range(3):
        images = torch.rand(4, 3, 48, 48, device=device)
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
            pred = model(images)
            targets = synthetic_targets(pred.shape, device)
            loss = criterion(pred, *targets)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        history.append(loss.detach())
    print("losses", [round(v, 4) for v in torch.stack(history).tolist()])


if __name__ == "__main__":
    main()
