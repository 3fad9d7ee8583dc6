# source: https://github.com/pytorch/pytorch/issues/79270
# area: dtype
# bug: the eval script enables TF32 matmuls "for speed"; on Ampere+ GPUs rigid transforms of points ~1e3 m from the origin lose ~0.5 m, so registration RMSE and inlier ratio are wrong
import math
from dataclasses import dataclass

import torch


@dataclass
class EvalConfig:
    num_scans: int = 6
    points_per_scan: int = 4096
    correspondences: int = 512
    origin_offset: float = 1500.0
    noise: float = 0.005
    inlier_thresh: float = 0.05
    fast_matmul: bool = True


def configure_backends(cfg):
    if cfg.fast_matmul:
        torch.backends.cuda.matmul.allow_tf32 = True  # expect: any
    torch.backends.cudnn.benchmark = True


def random_rotation(generator):
    q = torch.randn(4, generator=generator)
    q = q / q.norm()
    w, x, y, z = q.tolist()
    return torch.tensor([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def apply_transform(points, rotation, translation):
    return points @ rotation.transpose(-1, -2) + translation


def kabsch(src, tgt):
    src_c, tgt_c = src.mean(0), tgt.mean(0)
    h = (src - src_c).transpose(0, 1) @ (tgt - tgt_c)
    u, _, vt = torch.linalg.svd(h)
    d = torch.sign(torch.linalg.det(vt.transpose(0, 1) @ u.transpose(0, 1)))
    fix = torch.diag(torch.stack([torch.ones_like(d), torch.ones_like(d), d]))
    rotation = vt.transpose(0, 1) @ fix @ u.transpose(0, 1)
    return rotation, tgt_c - rotation @ src_c


def make_scan(cfg, generator, device):
    src = torch.randn(cfg.points_per_scan, 3, generator=generator) * 20.0
    src = src + torch.tensor([cfg.origin_offset, -cfg.origin_offset, 30.0])
    rot = random_rotation(generator)
    trans = torch.randn(3, generator=generator) * 2.0
    tgt = apply_transform(src, rot, trans) + cfg.noise * torch.randn(src.shape, generator=generator)
    return src.to(device), tgt.to(device), rot.to(device)


def evaluate(cfg, device):
    g = torch.Generator().manual_seed(0)
    rmses, inliers, rot_errs = [], [], []
    for _ in range(cfg.num_scans):
        src, tgt, gt_rot = make_scan(cfg, g, device)
        idx = torch.randperm(cfg.points_per_scan, generator=g)[: cfg.correspondences].to(device)
        rot, trans = kabsch(src[idx], tgt[idx])
        aligned = apply_transform(src, rot, trans)
        residual = (aligned - tgt).norm(dim=1)
        rmses.append(residual.pow(2).mean().sqrt())
        inliers.append((residual < cfg.inlier_thresh).float().mean())
        cos = ((gt_rot.transpose(0, 1) @ rot).diagonal().sum() - 1) / 2
        rot_errs.append(torch.rad2deg(torch.acos(cos.clamp(-1, 1))))
    return torch.stack(rmses).mean().item(), torch.stack(inliers).mean().item(), torch.stack(rot_errs).max().item()


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cfg = EvalConfig()
    configure_backends(cfg)
    rmse, inlier_ratio, worst_rot = evaluate(cfg, device)
    print(f"RMSE {rmse:.4f} m | inlier ratio {inlier_ratio:.3f} | worst rotation error {worst_rot:.4f} deg")
    assert math.isfinite(rmse)


if __name__ == "__main__":
    main()
