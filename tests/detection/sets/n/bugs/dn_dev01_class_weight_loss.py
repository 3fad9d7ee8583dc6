# source: https://github.com/open-mmlab/mmaction2/issues/1456
# area: device placement
# bug: class_weight from the loss config is kept as a plain CPU tensor and handed to cross_entropy with CUDA scores
import torch
import torch.nn as nn
import torch.nn.functional as F

LOSS_REGISTRY = {}


def register(cls):
    LOSS_REGISTRY[cls.__name__] = cls
    return cls


@register
class CrossEntropyLoss(nn.Module):
    def __init__(self, loss_weight=1.0, class_weight=None):
        super().__init__()
        self.loss_weight = loss_weight
        self.class_weight = None
        if class_weight is not None:
            self.class_weight = torch.Tensor(class_weight)  # expect[w]: any

    def forward(self, cls_score, label):
        kwargs = {}
        if self.class_weight is not None:
            kwargs["weight"] = self.class_weight  # expect[w]: any
        return self.loss_weight * F.cross_entropy(cls_score, label, **kwargs)


def build_loss(cfg):
    cfg = dict(cfg)
    return LOSS_REGISTRY[cfg.pop("type")](**cfg)


class I3DHead(nn.Module):
    def __init__(self, in_channels, num_classes, loss_cls):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool3d(1)
        self.dropout = nn.Dropout(0.5)
        self.fc = nn.Linear(in_channels, num_classes)
        self.loss_cls = build_loss(loss_cls)

    def forward(self, feats):
        x = self.pool(feats).flatten(1)
        return self.fc(self.dropout(x))

    def loss(self, cls_score, labels):
        return {"loss_cls": self.loss_cls(cls_score, labels)}


class Recognizer3D(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv3d(3, 16, kernel_size=3, padding=1), nn.BatchNorm3d(16), nn.ReLU(),
            nn.Conv3d(16, 32, kernel_size=3, stride=2, padding=1), nn.ReLU(),
        )
        self.cls_head = I3DHead(32, cfg["num_classes"], cfg["loss_cls"])

    def forward_train(self, imgs, labels):
        return self.cls_head.loss(self.cls_head(self.backbone(imgs)), labels)


CONFIG = dict(
    num_classes=4,
    loss_cls=dict(type="CrossEntropyLoss", loss_weight=1.0, class_weight=[1.0, 2.0, 2.0, 0.5]),
    lr=0.01,
    epochs=2,
)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    model = Recognizer3D(CONFIG).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=CONFIG["lr"], momentum=0.9)
    clips = torch.randn(16, 3, 8, 32, 32)
    labels = torch.randint(0, CONFIG["num_classes"], (16,))
    for epoch in range(CONFIG["epochs"]):
        total = torch.zeros((), device=device)
        for i in range(0, len(clips), 4):
            imgs = clips[i:i + 4].to(device)
            lbl = labels[i:i + 4].to(device)
            losses = model.forward_train(imgs, lbl)
            loss = sum(losses.values())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.detach()
        print(f"epoch {epoch}: loss {total.item() / 4:.4f}")


if __name__ == "__main__":
    main()
