# source: https://github.com/naver/croco/pull/18
# area: dtype
# bug: the model module switches on TF32 matmuls globally, so on Ampere+ GPUs torch.cdist (matmul-based for large clouds) returns distances with ~1e-3 relative error and the 5 cm correspondence threshold rejects true matches
import math
import torch

torch.backends.cuda.matmul.allow_tf32 = True  # expect: any
torch.backends.cudnn.allow_tf32 = True


def random_rigid(angle_deg, translation):
    a = math.radians(angle_deg)
    rot = torch.tensor([[math.cos(a), -math.sin(a), 0.0],
                        [math.sin(a), math.cos(a), 0.0],
                        [0.0, 0.0, 1.0]])
    return rot, torch.tensor(translation)


class CorrespondenceFinder:
    def __init__(self, inlier_radius=0.05):
        self.inlier_radius = inlier_radius

    def mutual_nearest(self, src, dst):
        d = torch.cdist(src, dst)
        nn12 = d.argmin(1)
        nn21 = d.argmin(0)
        mutual = nn21[nn12] == torch.arange(src.size(0), device=src.device)
        close = d.gather(1, nn12[:, None]).squeeze(1) < self.inlier_radius
        return nn12, mutual & close


def kabsch(src, dst, weights):
    w = weights[:, None]
    mu_s = (w * src).sum(0) / w.sum()
    mu_d = (w * dst).sum(0) / w.sum()
    h = ((src - mu_s) * w).T @ (dst - mu_d)
    u, _, vt = torch.linalg.svd(h)
    sign = torch.sign(torch.linalg.det(vt.T @ u.T))
    fix = torch.diag(torch.stack([torch.ones_like(sign), torch.ones_like(sign), sign]))
    rot = vt.T @ fix @ u.T
    return rot, mu_d - rot @ mu_s


@torch.no_grad()
def register_scans(num_points=4000):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    site = torch.tensor([4500.0, 3200.0, 120.0])
    local = (torch.rand(num_points, 3) - 0.5) * torch.tensor([12.0, 12.0, 2.0])
    rot_gt, t_gt = random_rigid(0.1, [0.01, -0.02, 0.0])
    scan = local + site
    moved = local @ rot_gt.T + t_gt + site + 0.002 * torch.randn(num_points, 3)
    origin = scan.mean(0)
    src, dst = (scan - origin).to(device), (moved - origin).to(device)

    finder = CorrespondenceFinder()
    nn12, inliers = finder.mutual_nearest(src, dst)
    rot, _ = kabsch(src, dst[nn12], inliers.float())
    rot_err = (rot.cpu() - rot_gt).abs().max().item()
    print(f"inliers {inliers.sum().item()}/{num_points}, rotation error {rot_err:.2e}")


if __name__ == "__main__":
    register_scans()
