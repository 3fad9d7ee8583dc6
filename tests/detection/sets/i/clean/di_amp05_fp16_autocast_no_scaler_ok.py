# twin of: bugs/di_amp05_fp16_autocast_no_scaler.py
# area: AMP
# correct: when the config selects float16 a GradScaler is enabled and used for backward/step, so fp16 gradients do not underflow
import torch
import torch.nn as nn
import torch.nn.functional as F
from dataclasses import dataclass


@dataclass
class TrainConfig:
    dtype: str = "float16"
    steps: int = 6
    batch: int = 256
    lr: float = 1e-3
    w_ray: float = 0.1


class PointRayHead(nn.Module):
    """Predicts a per-pixel 3D point (metres) and a unit ray direction from image features."""

    def __init__(self, in_dim=48, hidden=96):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(in_dim, hidden), nn.GELU(), nn.Linear(hidden, hidden), nn.GELU())
        self.point_head = nn.Linear(hidden, 3)
        self.ray_head = nn.Linear(hidden, 3)

    def forward(self, feats):
        h = self.backbone(feats)
        return self.point_head(h), F.normalize(self.ray_head(h), dim=-1)


def multitask_loss(pred_pts, pred_rays, gt_pts, gt_rays, w_ray):
    point_loss = F.mse_loss(pred_pts.float(), gt_pts)
    ray_loss = (1.0 - F.cosine_similarity(pred_rays.float(), gt_rays, dim=-1)).mean()
    return point_loss + w_ray * ray_loss, point_loss.detach(), ray_loss.detach()


def synthetic_scene(n, device, gen):
    feats = torch.randn(n, 48, generator=gen)
    pts = torch.randn(n, 3, generator=gen) * 10.0
    rays = F.normalize(pts + 0.1 * torch.randn(n, 3, generator=gen), dim=-1)
    return feats.to(device), pts.to(device), rays.to(device)


def train(cfg, device):
    model = PointRayHead().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.01)
    ptdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[cfg.dtype]
    use_amp = device.type == "cuda" and ptdtype != torch.float32
    ctx = torch.autocast(device_type=device.type, dtype=ptdtype, enabled=use_amp)
    scaler = torch.amp.GradScaler("cuda", enabled=(use_amp and cfg.dtype == "float16"))
    gen = torch.Generator().manual_seed(0)
    log = []
    for step in range(cfg.steps):
        feats, gt_pts, gt_rays = synthetic_scene(cfg.batch, device, gen)
        optimizer.zero_grad(set_to_none=True)
        with ctx:
            pred_pts, pred_rays = model(feats)
            loss, p_loss, r_loss = multitask_loss(pred_pts, pred_rays, gt_pts, gt_rays, cfg.w_ray)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        log.append(torch.stack([loss.detach(), p_loss, r_loss]))
    return torch.stack(log)


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    log = train(TrainConfig(), device)
    total, point, ray = log[-1].tolist()
    print(f"final loss {total:.3f} (point {point:.3f}, ray {ray:.4f})")
