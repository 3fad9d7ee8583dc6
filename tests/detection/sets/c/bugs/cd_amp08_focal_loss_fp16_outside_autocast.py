# source: https://github.com/pytorch/pytorch/issues/40497
# area: AMP
# bug: the hand-written focal loss runs outside autocast on the fp16 logits, so on a GPU sigmoid saturates to 0/1 in half precision and log(pt + 1e-8) becomes log(0) = -inf (1e-8 is not representable in fp16), giving inf/NaN loss
import math

import torch
import torch.nn as nn


class RetinaClsHead(nn.Module):
    def __init__(self, in_ch=32, n_anchors=3, n_classes=6, prior=0.01):
        super().__init__()
        self.n_anchors, self.n_classes = n_anchors, n_classes
        self.stem = nn.Sequential(nn.Conv2d(3, in_ch, 3, stride=2, padding=1), nn.ReLU())
        tower = []
        for _ in range(2):
            tower += [nn.Conv2d(in_ch, in_ch, 3, padding=1), nn.GroupNorm(8, in_ch), nn.ReLU()]
        self.tower = nn.Sequential(*tower)
        self.cls_logits = nn.Conv2d(in_ch, n_anchors * n_classes, 3, padding=1)
        nn.init.constant_(self.cls_logits.bias, -math.log((1 - prior) / prior))

    def forward(self, images):
        x = self.cls_logits(self.tower(self.stem(images)))
        b, _, h, w = x.shape
        x = x.view(b, self.n_anchors, self.n_classes, h, w).permute(0, 3, 4, 1, 2)
        return x.reshape(b, -1, self.n_classes)


def sigmoid_focal_loss(logits, targets, alpha=0.25, gamma=2.0, eps=1e-8):
    p = logits.sigmoid()
    pt = p * targets + (1 - p) * (1 - targets)
    at = alpha * targets + (1 - alpha) * (1 - targets)
    loss = -at * (1 - pt) ** gamma * torch.log(pt + eps)  # expect[w]: any
    return loss.sum()


def assign_targets(cls_logits, pos_frac=0.02):
    targets = torch.zeros_like(cls_logits)
    batch, n_locations, n_classes = targets.shape
    pos = torch.rand(batch, n_locations, device=targets.device) < pos_frac
    cls = torch.randint(0, n_classes, (batch, n_locations), device=targets.device)
    targets[pos, cls[pos]] = 1.0
    return targets


def train(epochs=3, iters=6, batch=4):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = device.type == "cuda"
    model = RetinaClsHead().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    scaler = torch.amp.GradScaler(device.type, enabled=use_amp)
    for epoch in range(epochs):
        epoch_loss = torch.zeros((), device=device)
        for _ in range(iters):
            images = torch.randn(batch, 3, 64, 64, device=device)
            with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
                cls_logits = model(images)
            targets = assign_targets(cls_logits.detach())
            num_pos = targets.sum().clamp(min=1.0)
            loss = sigmoid_focal_loss(cls_logits, targets) / num_pos  # expect[w]: any
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            epoch_loss += loss.detach().float()
        print(f"epoch {epoch}: focal loss {(epoch_loss / iters).item():.4f}")


if __name__ == "__main__":
    torch.manual_seed(0)
    train()
