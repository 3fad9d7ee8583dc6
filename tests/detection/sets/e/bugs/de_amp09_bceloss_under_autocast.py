# source: https://github.com/Nioolek/PPYOLOE_pytorch/issues/16
# area: AMP
# bug: sigmoid followed by nn.BCELoss is computed inside CUDA autocast, which raises "binary_cross_entropy and BCELoss are unsafe to autocast" on a GPU
import torch
import torch.nn as nn


class DetHeadConfig:
    in_ch = 32
    num_classes = 6
    grid = 8
    batch = 8
    steps = 6
    lr = 1e-3


class ObjectnessHead(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, cfg.in_ch, 3, stride=4, padding=1), nn.SiLU(),
                                  nn.Conv2d(cfg.in_ch, cfg.in_ch, 3, padding=1), nn.SiLU())
        self.cls = nn.Conv2d(cfg.in_ch, cfg.num_classes, 1)
        self.obj = nn.Conv2d(cfg.in_ch, 1, 1)

    def forward(self, img):
        f = self.stem(img)
        return self.cls(f), self.obj(f)


class VarifocalStyleLoss(nn.Module):
    def __init__(self, obj_weight=1.0, cls_weight=1.0):
        super().__init__()
        self.bce = nn.BCELoss(reduction="none")
        self.obj_weight = obj_weight
        self.cls_weight = cls_weight

    def forward(self, cls_logits, obj_logits, cls_target, obj_target):
        cls_prob = cls_logits.sigmoid()
        obj_prob = obj_logits.sigmoid()
        joint = cls_prob * obj_prob
        cls_term = self.bce(joint, cls_target).sum() / cls_target.sum().clamp(min=1.0)  # expect: any
        obj_term = self.bce(obj_prob, obj_target).mean()
        return self.cls_weight * cls_term + self.obj_weight * obj_term


def make_targets(cfg, device):
    obj = (torch.rand(cfg.batch, 1, cfg.grid, cfg.grid, device=device) < 0.2).float()
    labels = torch.randint(0, cfg.num_classes, (cfg.batch, cfg.grid, cfg.grid), device=device)
    cls = nn.functional.one_hot(labels, cfg.num_classes).permute(0, 3, 1, 2).float() * obj
    return cls, obj


def main():
    torch.manual_seed(0)
    cfg = DetHeadConfig()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    amp = device.type == "cuda"
    model = ObjectnessHead(cfg).to(device)
    criterion = VarifocalStyleLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=0.937, nesterov=True)
    scaler = torch.amp.GradScaler("cuda", enabled=amp)
    history = []
    for _ in range(cfg.steps):
        imgs = torch.rand(cfg.batch, 3, cfg.grid * 4, cfg.grid * 4, device=device)
        cls_t, obj_t = make_targets(cfg, device)
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=amp):
            cls_logits, obj_logits = model(imgs)
            loss = criterion(cls_logits, obj_logits, cls_t, obj_t)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        history.append(loss.detach())
    print("loss trace", [round(v, 4) for v in torch.stack(history).tolist()])


if __name__ == "__main__":
    main()
