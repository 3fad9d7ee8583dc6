# twin of: bugs/dp_sync06_giou_loss_mask_index.py
# area: transfer & sync
# correct: the intersection is computed with clamp on fixed-shape tensors, so the loss never needs a mask-dependent shape or a host sync
from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass
class RegConfig:
    feat_dim: int = 32
    n_queries: int = 16
    batch_size: int = 8
    steps: int = 12
    lr: float = 1e-3
    giou_weight: float = 2.0
    l1_weight: float = 5.0


def _upcast_non_float(t):
    return t if t.dtype in (torch.float16, torch.float32, torch.float64) else t.float()


def _loss_inter_union(boxes1, boxes2):
    x1, y1, x2, y2 = boxes1.unbind(dim=-1)
    x1g, y1g, x2g, y2g = boxes2.unbind(dim=-1)
    xkis1 = torch.max(x1, x1g)
    ykis1 = torch.max(y1, y1g)
    xkis2 = torch.min(x2, x2g)
    ykis2 = torch.min(y2, y2g)
    intsctk = (xkis2 - xkis1).clamp(min=0) * (ykis2 - ykis1).clamp(min=0)
    unionk = (x2 - x1) * (y2 - y1) + (x2g - x1g) * (y2g - y1g) - intsctk
    return intsctk, unionk


def generalized_box_iou_loss(boxes1, boxes2, reduction="mean", eps=1e-7):
    boxes1 = _upcast_non_float(boxes1)
    boxes2 = _upcast_non_float(boxes2)
    intsctk, unionk = _loss_inter_union(boxes1, boxes2)
    iouk = intsctk / (unionk + eps)
    x1, y1, x2, y2 = boxes1.unbind(dim=-1)
    x1g, y1g, x2g, y2g = boxes2.unbind(dim=-1)
    xc1, yc1 = torch.min(x1, x1g), torch.min(y1, y1g)
    xc2, yc2 = torch.max(x2, x2g), torch.max(y2, y2g)
    area_c = (xc2 - xc1) * (yc2 - yc1)
    loss = 1 - (iouk - ((area_c - unionk) / (area_c + eps)))
    if reduction == "mean":
        return loss.mean() if loss.numel() > 0 else 0.0 * loss.sum()
    if reduction == "sum":
        return loss.sum()
    return loss


class BoxHead(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(cfg.feat_dim, 64), nn.ReLU(), nn.Linear(64, 4))

    def forward(self, feats):
        cx, cy, w, h = self.mlp(feats).sigmoid().unbind(-1)
        return torch.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], dim=-1)


def make_targets(n, device):
    centers = torch.rand(n, 2, device=device) * 0.6 + 0.2
    sizes = torch.rand(n, 2, device=device) * 0.3 + 0.05
    return torch.cat([centers - sizes / 2, centers + sizes / 2], dim=-1)


def train(cfg, device):
    head = BoxHead(cfg).to(device)
    encoder = nn.Linear(4, cfg.feat_dim).to(device)
    opt = torch.optim.Adam(list(head.parameters()) + list(encoder.parameters()), lr=cfg.lr)
    total = torch.zeros((), device=device)
    for _ in range(cfg.steps):
        targets = make_targets(cfg.batch_size * cfg.n_queries, device)
        feats = encoder(targets + 0.05 * torch.randn_like(targets))
        preds = head(feats)
        loss = cfg.giou_weight * generalized_box_iou_loss(preds, targets)
        loss = loss + cfg.l1_weight * (preds - targets).abs().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        total += loss.detach()
    return total / cfg.steps


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    mean_loss = train(RegConfig(), device)
    print(f"mean box loss over run: {mean_loss.item():.4f}")
