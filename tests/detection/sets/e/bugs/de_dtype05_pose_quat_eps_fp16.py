# source: https://github.com/kornia/kornia/issues/3966
# area: dtype
# bug: the quaternion normalisation guard uses eps=1e-12, which rounds to 0 in float16, so half-precision GPU inference turns zero/degenerate quaternions into NaN rotation matrices
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
infer_dtype = torch.float16 if device.type == "cuda" else torch.float32


def normalize_quaternion(q, eps=1e-12):
    norm = q.norm(p=2, dim=-1, keepdim=True)
    return q / norm.clamp_min(eps)  # expect: any


def quaternion_to_rotation_matrix(q):
    q = normalize_quaternion(q)
    w, x, y, z = q.unbind(-1)
    two = 2.0
    m = torch.stack([
        1 - two * (y * y + z * z), two * (x * y - z * w), two * (x * z + y * w),
        two * (x * y + z * w), 1 - two * (x * x + z * z), two * (y * z - x * w),
        two * (x * z - y * w), two * (y * z + x * w), 1 - two * (x * x + y * y),
    ], dim=-1)
    return m.view(*q.shape[:-1], 3, 3)


class PoseRegressor(nn.Module):
    def __init__(self, feat_dim=64):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, feat_dim), nn.ReLU(),
        )
        self.trans_head = nn.Linear(feat_dim, 3)
        self.rot_head = nn.Linear(feat_dim, 4)
        nn.init.zeros_(self.rot_head.weight)
        nn.init.zeros_(self.rot_head.bias)

    def forward(self, images):
        f = self.backbone(images)
        return self.trans_head(f), self.rot_head(f)


@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    errs = []
    for images, gt_R in loader:
        images = images.to(device, dtype=infer_dtype)
        gt_R = gt_R.to(device)
        _, quat = model(images)
        R = quaternion_to_rotation_matrix(quat).float()
        err = (R - gt_R).flatten(1).norm(dim=1)
        errs.append(err)
    errs = torch.cat(errs)
    return errs.mean().item(), torch.isnan(errs).float().mean().item()


def synthetic_loader(n_batches=3, batch=4):
    for _ in range(n_batches):
        yield torch.rand(batch, 3, 32, 32), torch.eye(3).expand(batch, 3, 3).clone()


if __name__ == "__main__":
    torch.manual_seed(0)
    model = PoseRegressor().to(device=device, dtype=infer_dtype)
    mean_err, nan_frac = evaluate(model, synthetic_loader())
    print(f"rotation error {mean_err:.4f}, nan fraction {nan_frac:.2f}")
