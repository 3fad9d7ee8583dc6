# source: https://github.com/ucla-mobility/V2V4Real/pull/30
# area: AMP
# bug: the domain-adaptation head runs after the CUDA autocast block on the float16 features the detector produced inside it, so its float32 Linear layers hit a Half/Float dtype mismatch
import torch
import torch.nn as nn
import torch.nn.functional as F


class GradReverse(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, alpha):
        ctx.alpha = alpha
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return -ctx.alpha * grad, None


class BEVDetector(nn.Module):
    def __init__(self, in_ch=8, feat=32, anchors=2):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(in_ch, feat, 3, padding=1), nn.BatchNorm2d(feat), nn.ReLU(),
            nn.Conv2d(feat, feat, 3, stride=2, padding=1), nn.BatchNorm2d(feat), nn.ReLU(),
        )
        self.cls_head = nn.Conv2d(feat, anchors, 1)

    def forward(self, bev):
        feats = self.backbone(bev)
        return {"spatial_features": feats, "cls_preds": self.cls_head(feats)}


class DomainAdaptationModule(nn.Module):
    def __init__(self, feat=32, alpha=0.1):
        super().__init__()
        self.alpha = alpha
        self.classifier = nn.Sequential(nn.Linear(feat, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, output_dict, domain_label):
        pooled = output_dict["spatial_features"].mean(dim=(2, 3))
        logits = self.classifier(GradReverse.apply(pooled, self.alpha)).squeeze(1)
        return F.binary_cross_entropy_with_logits(logits, domain_label)


def detection_loss(output_dict, target):
    return F.binary_cross_entropy_with_logits(output_dict["cls_preds"], target)


def train_da(model, da_module, source_batches, target_batches, device, epochs=2):
    use_amp = device.type == "cuda"
    params = list(model.parameters()) + list(da_module.parameters())
    optimizer = torch.optim.Adam(params, lr=1e-3)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    history = []
    for _ in range(epochs):
        for (src, src_tgt), tgt in zip(source_batches, target_batches):
            total = torch.cat([src, tgt]).to(device)
            domain = torch.cat([torch.zeros(len(src)), torch.ones(len(tgt))]).to(device)
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
                output_dict = model(total)
                source_out = {k: v[: len(src)] for k, v in output_dict.items()}
                det_loss = detection_loss(source_out, src_tgt.to(device))
            da_loss = da_module(output_dict, domain)  # expect: any
            loss = det_loss + da_loss
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            history.append(loss.detach())
    return torch.stack(history)


def make_batches(n, batch, with_labels, seed):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        bev = torch.randn(batch, 8, 32, 32, generator=g)
        if with_labels:
            out.append((bev, (torch.rand(batch, 2, 16, 16, generator=g) > 0.9).float()))
        else:
            out.append(bev)
    return out


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model, da = BEVDetector().to(device), DomainAdaptationModule().to(device)
    hist = train_da(model, da, make_batches(4, 4, True, 0), make_batches(4, 4, False, 1), device)
    print(f"loss start {hist[0].item():.4f} end {hist[-1].item():.4f}")
