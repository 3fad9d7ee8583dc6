# twin of: bugs/dg_amp06_bce_mask_loss_autocast.py
# area: AMP
# correct: the loss is computed from the raw logits with F.binary_cross_entropy_with_logits, which autocast runs in float32 and accepts under CUDA mixed precision
import torch
import torch.nn as nn
import torch.nn.functional as F


def mask_rcnn_loss(pred_mask_logits, gt_masks, gt_classes):
    """Per-instance mask loss on the logits of each instance's ground-truth class."""
    n = pred_mask_logits.size(0)
    idx = torch.arange(n, device=pred_mask_logits.device)
    logits = pred_mask_logits[idx, gt_classes]
    return F.binary_cross_entropy_with_logits(logits, gt_masks, reduction="mean")


class MaskHead(nn.Module):
    def __init__(self, in_ch=16, num_classes=5, conv_dim=32):
        super().__init__()
        self.convs = nn.Sequential(
            nn.Conv2d(in_ch, conv_dim, 3, padding=1), nn.ReLU(),
            nn.Conv2d(conv_dim, conv_dim, 3, padding=1), nn.ReLU(),
        )
        self.deconv = nn.ConvTranspose2d(conv_dim, conv_dim, 2, stride=2)
        self.predictor = nn.Conv2d(conv_dim, num_classes, 1)

    def forward(self, roi_features, instances=None):
        x = F.relu(self.deconv(self.convs(roi_features)))
        mask_logits = self.predictor(x)
        if self.training:
            gt_masks, gt_classes = instances
            return {"loss_mask": mask_rcnn_loss(mask_logits, gt_masks, gt_classes)}
        return mask_logits.sigmoid()


def sample_rois(batch_rois=8, in_ch=16, roi=14, num_classes=5, generator=None):
    feats = torch.randn(batch_rois, in_ch, roi, roi, generator=generator)
    gt_masks = (torch.rand(batch_rois, roi * 2, roi * 2, generator=generator) > 0.5).float()
    gt_classes = torch.randint(0, num_classes, (batch_rois,), generator=generator)
    return feats, gt_masks, gt_classes


def train_mask_head(device, iters=5):
    head = MaskHead().to(device)
    optimizer = torch.optim.SGD(head.parameters(), lr=0.02, momentum=0.9, weight_decay=1e-4)
    use_amp = device.type == "cuda"
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    g = torch.Generator().manual_seed(0)
    head.train()
    losses = []
    for _ in range(iters):
        feats, gt_masks, gt_classes = (t.to(device) for t in sample_rois(generator=g))
        with torch.autocast(device_type=device.type, enabled=use_amp):
            loss_dict = head(feats, (gt_masks, gt_classes))
            loss = sum(loss_dict.values())
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        losses.append(loss.detach())
    return torch.stack(losses)


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    print("mask losses:", train_mask_head(device).cpu().tolist())
