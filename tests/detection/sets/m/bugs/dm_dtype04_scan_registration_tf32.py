# source: https://github.com/pytorch/pytorch/issues/53635
# area: dtype
# bug: the runtime config turns on TF32 matmuls, so on Ampere GPUs the float32 rigid transforms of scanner coordinates (~1000 mm) are rounded to ~10 mantissa bits and the sub-millimetre registration error is wrong
from dataclasses import dataclass

import torch


@dataclass
class RuntimeConfig:
    allow_tf32: bool = True  # expect[tf32]: any
    cudnn_benchmark: bool = True
    num_scans: int = 6
    num_vertices: int = 5000
    tolerance_mm: float = 0.05


def apply_runtime_config(cfg):
    torch.backends.cuda.matmul.allow_tf32 = cfg.allow_tf32  # expect[tf32]: any
    torch.backends.cudnn.allow_tf32 = cfg.allow_tf32
    torch.backends.cudnn.benchmark = cfg.cudnn_benchmark


def random_rotation(generator, device):
    q = torch.randn(4, generator=generator).to(device)
    q = q / q.norm()
    w, x, y, z = q
    return torch.stack([
        torch.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)]),
        torch.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)]),
        torch.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]),
    ])


def procrustes(src, dst):
    mu_s, mu_d = src.mean(0), dst.mean(0)
    src_c, dst_c = src - mu_s, dst - mu_d
    cov = src_c.T @ dst_c
    u, _, vh = torch.linalg.svd(cov)
    d = torch.sign(torch.linalg.det(vh.T @ u.T))
    fix = torch.diag(torch.stack([torch.ones_like(d), torch.ones_like(d), d]))
    rot = vh.T @ fix @ u.T
    trans = mu_d - mu_s @ rot.T
    return rot, trans


class ScanRegistrar:
    def __init__(self, template, cfg):
        self.template = template
        self.cfg = cfg

    def register(self, scan):
        rot, trans = procrustes(scan, self.template)
        aligned = scan @ rot.T + trans
        err = (aligned - self.template).norm(dim=1)
        return aligned, err


def main():
    cfg = RuntimeConfig()
    apply_runtime_config(cfg)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    g = torch.Generator().manual_seed(0)
    offset = torch.tensor([1024.5, -870.25, 1310.75])
    template = (torch.randn(cfg.num_vertices, 3, generator=g) * 80 + offset).to(device)
    registrar = ScanRegistrar(template, cfg)
    errors = []
    for _ in range(cfg.num_scans):
        rot = random_rotation(g, device)
        shift = (torch.randn(3, generator=g) * 50).to(device)
        scan = (template - shift) @ rot
        _, err = registrar.register(scan)
        errors.append(err.max())
    worst = torch.stack(errors).max()
    print("worst vertex error (mm):", float(worst), "within tolerance:", bool(worst < cfg.tolerance_mm))


if __name__ == "__main__":
    main()
