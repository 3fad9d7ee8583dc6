# source: https://github.com/kornia/kornia/issues/4021
# area: dtype
# bug: quaternions are normalized with eps=1e-12, which rounds to 0 in float16; with the half model used on the GPU the gated-off (all-zero) slots divide 0/0 and the NaNs poison the evaluation metric
import torch
import torch.nn as nn
import torch.nn.functional as F


class PoseHeadConfig:
    feat_dim = 64
    num_slots = 6
    image_size = 32


def normalize_quaternion(q, eps=1e-12):  # expect[w]: any
    return F.normalize(q, p=2.0, dim=-1, eps=eps)  # expect[w]: any


def quaternion_to_matrix(q):
    w, x, y, z = q.unbind(-1)
    row0 = torch.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1)
    row1 = torch.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1)
    row2 = torch.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1)
    return torch.stack([row0, row1, row2], -2)


class MultiObjectPoseNet(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 32, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(32, cfg.feat_dim, 3, stride=2, padding=1), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        )
        self.objectness = nn.Linear(cfg.feat_dim, cfg.num_slots)
        self.rotation = nn.Linear(cfg.feat_dim, cfg.num_slots * 4)
        self.num_slots = cfg.num_slots

    def forward(self, images):
        feats = self.backbone(images)
        present = self.objectness(feats) > 0
        quat = self.rotation(feats).view(-1, self.num_slots, 4)
        quat = quat * present.unsqueeze(-1).to(quat.dtype)
        return normalize_quaternion(quat), present


def geodesic_error(r_pred, r_gt):
    rel = r_pred.transpose(-1, -2) @ r_gt
    cos = ((rel.diagonal(dim1=-2, dim2=-1).sum(-1) - 1) / 2).clamp(-1.0, 1.0)
    return torch.acos(cos)


@torch.no_grad()
def evaluate(model, loader, device, dtype):
    err_sum = torch.zeros((), device=device)
    count = torch.zeros((), device=device)
    for images, gt_quat in loader:
        images = images.to(device, dtype=dtype)
        gt_rot = quaternion_to_matrix(normalize_quaternion(gt_quat.to(device, dtype=dtype)))
        quat, present = model(images)
        err = geodesic_error(quaternion_to_matrix(quat), gt_rot)
        err_sum += (err * present).float().sum()
        count += present.sum()
    return (err_sum / count.clamp(min=1)).item()


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.float16 if device.type == "cuda" else torch.float32
    cfg = PoseHeadConfig()
    model = MultiObjectPoseNet(cfg).to(device=device, dtype=dtype).eval()
    loader = [(torch.rand(8, 3, cfg.image_size, cfg.image_size), torch.randn(8, cfg.num_slots, 4)) for _ in range(4)]
    print(f"mean geodesic error: {evaluate(model, loader, device, dtype):.4f} rad")


if __name__ == "__main__":
    main()
