# twin of: bugs/do_dev07_head_class_weight.py
# area: device placement
# correct: the class weights are registered once as a buffer of the head, so they follow model.to(device) and no tensor is built per step
import torch
import torch.nn as nn
import torch.nn.functional as F

MODEL_CFG = dict(
    backbone=dict(in_channels=3, width=16),
    cls_head=dict(num_classes=5, dropout=0.3, class_weight=[1.0, 1.0, 2.0, 2.0, 4.0]),
    num_segments=4,
)


class FrameBackbone(nn.Module):
    def __init__(self, in_channels, width):
        super().__init__()
        self.out_channels = width * 2
        self.body = nn.Sequential(
            nn.Conv2d(in_channels, width, 3, stride=2, padding=1), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
            nn.Conv2d(width, self.out_channels, 3, stride=2, padding=1), nn.BatchNorm2d(self.out_channels), nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d(1),
        )

    def forward(self, frames):
        return self.body(frames).flatten(1)


class TSNHead(nn.Module):
    def __init__(self, num_classes, in_channels, dropout=0.5, class_weight=None):
        super().__init__()
        self.register_buffer("class_weight", torch.tensor(class_weight) if class_weight is not None else None)
        self.dropout = nn.Dropout(dropout)
        self.fc_cls = nn.Linear(in_channels, num_classes)

    def forward(self, feats, num_segments):
        feats = feats.view(-1, num_segments, feats.size(-1)).mean(1)
        return self.fc_cls(self.dropout(feats))

    def loss(self, cls_score, labels):
        loss_cls = F.cross_entropy(cls_score, labels, weight=self.class_weight)
        top1 = (cls_score.argmax(1) == labels).float().mean()
        return dict(loss_cls=loss_cls, top1_acc=top1.detach())


class Recognizer2D(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.num_segments = cfg["num_segments"]
        self.backbone = FrameBackbone(**cfg["backbone"])
        self.cls_head = TSNHead(in_channels=self.backbone.out_channels, **cfg["cls_head"])

    def forward_train(self, clips, labels):
        b, t = clips.shape[:2]
        feats = self.backbone(clips.flatten(0, 1))
        return self.cls_head.loss(self.cls_head(feats, t), labels)


def synthetic_clips(n, t, num_classes, seed):
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, num_classes, (n,), generator=g)
    clips = torch.randn(n, t, 3, 32, 32, generator=g) * 0.5
    clips[torch.arange(n), :, labels % 3] += (labels.float() / num_classes).view(n, 1, 1, 1)
    return clips, labels


def train(cfg, epochs=2, batch_size=8):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Recognizer2D(cfg).to(device)
    optim = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    clips, labels = synthetic_clips(64, cfg["num_segments"], cfg["cls_head"]["num_classes"], 0)
    for epoch in range(epochs):
        model.train()
        perm = torch.randperm(clips.size(0))
        log = {"loss_cls": torch.zeros((), device=device), "top1_acc": torch.zeros((), device=device)}
        for i in range(0, clips.size(0), batch_size):
            idx = perm[i:i + batch_size]
            losses = model.forward_train(clips[idx].to(device), labels[idx].to(device))
            optim.zero_grad()
            losses["loss_cls"].backward()
            optim.step()
            for k in log:
                log[k] += losses[k].detach()
        n_iter = clips.size(0) // batch_size
        print(f"epoch {epoch}: " + ", ".join(f"{k}={v.item() / n_iter:.3f}" for k, v in log.items()))


if __name__ == "__main__":
    torch.manual_seed(0)
    train(MODEL_CFG)
