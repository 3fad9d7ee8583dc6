# source: https://github.com/pytorch/pytorch/issues/61890
# area: dtype
# bug: the runtime setup turns on TF32 for float32 matmuls, so on Ampere+ GPUs the vertex rotations keep only 10 mantissa bits and the rigidly aligned face mesh comes out visibly distorted
import math
import torch


def configure_runtime():
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = True  # expect: any
    torch.backends.cudnn.allow_tf32 = True


def euler_to_matrix(angles):
    """angles: (B, 3) yaw/pitch/roll in radians -> (B, 3, 3)"""
    y, p, r = angles.unbind(-1)
    cy, sy, cp, sp, cr, sr = y.cos(), y.sin(), p.cos(), p.sin(), r.cos(), r.sin()
    one, zero = torch.ones_like(y), torch.zeros_like(y)
    Ry = torch.stack([cy, zero, sy, zero, one, zero, -sy, zero, cy], -1).view(-1, 3, 3)
    Rp = torch.stack([one, zero, zero, zero, cp, -sp, zero, sp, cp], -1).view(-1, 3, 3)
    Rr = torch.stack([cr, -sr, zero, sr, cr, zero, zero, zero, one], -1).view(-1, 3, 3)
    return Ry @ Rp @ Rr


class FaceMeshAligner:
    """Puts posed scans back into the canonical frame of a template mesh."""

    def __init__(self, template, device):
        self.template = template.to(device)
        self.device = device

    def pose(self, angles, translation):
        R = euler_to_matrix(angles.to(self.device))
        verts = self.template.unsqueeze(0) @ R.transpose(1, 2)
        return verts + translation.to(self.device)[:, None, :]

    def align(self, scans):
        mu_s = scans.mean(dim=1, keepdim=True)
        mu_t = self.template.mean(dim=0, keepdim=True)
        cov = (scans - mu_s).transpose(1, 2) @ (self.template - mu_t)
        U, _, Vh = torch.linalg.svd(cov)
        d = torch.sign(torch.linalg.det(U @ Vh))
        D = torch.diag_embed(torch.stack([torch.ones_like(d), torch.ones_like(d), d], -1))
        R = U @ D @ Vh
        return (scans - mu_s) @ R + mu_t


def make_template(n=4000):
    u = torch.linspace(0, math.pi, 80)
    v = torch.linspace(0, 2 * math.pi, n // 80)
    uu, vv = torch.meshgrid(u, v, indexing="ij")
    verts = torch.stack([90 * uu.sin() * vv.cos(), 120 * uu.sin() * vv.sin(), 100 * uu.cos()], -1)
    return verts.reshape(-1, 3) + torch.tensor([0.0, 0.0, 1000.0])


def main():
    configure_runtime()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    aligner = FaceMeshAligner(make_template(), device)
    angles = (torch.rand(8, 3) - 0.5) * math.radians(60)
    translation = torch.randn(8, 3) * 50
    scans = aligner.pose(angles, translation)
    restored = aligner.align(scans)
    err = (restored - aligner.template).norm(dim=-1)
    print(f"vertex error mm: mean={err.mean().item():.5f} max={err.max().item():.5f}")


if __name__ == "__main__":
    main()
