# source: https://github.com/open-mmlab/mmdetection3d/issues/1842
# area: dtype
# bug: the BEV canvas is allocated as float32 while, under the CUDA-only fp16 autocast, pillar features are float16, so the indexed write raises "Index put requires the source and destination dtypes match"
import torch
import torch.nn as nn
import torch.nn.functional as F


class PillarFeatureNet(nn.Module):
    def __init__(self, in_channels=4, out_channels=32):
        super().__init__()
        self.linear = nn.Linear(in_channels + 3, out_channels, bias=False)
        self.norm = nn.BatchNorm1d(out_channels)

    def forward(self, points, num_points):
        mask = torch.arange(points.shape[1], device=points.device)[None, :] < num_points[:, None]
        mean_xyz = (points[..., :3] * mask[..., None]).sum(1) / num_points.clamp(min=1)[:, None]
        feats = torch.cat([points, points[..., :3] - mean_xyz[:, None]], dim=-1)
        x = self.linear(feats * mask[..., None])
        x = F.relu(self.norm(x.transpose(1, 2)).transpose(1, 2))
        return x.max(dim=1).values


class PointPillarsScatter(nn.Module):
    def __init__(self, in_channels, nx, ny):
        super().__init__()
        self.in_channels, self.nx, self.ny = in_channels, nx, ny

    def forward(self, voxel_features, coors, batch_size):
        canvases = []
        for b in range(batch_size):
            canvas = torch.zeros(self.in_channels, self.nx * self.ny, device=voxel_features.device)  # expect[canvas]: any
            sel = coors[:, 0] == b
            indices = coors[sel, 1] * self.nx + coors[sel, 2]
            canvas[:, indices] = voxel_features[sel].t()  # expect[canvas]: any
            canvases.append(canvas.view(self.in_channels, self.ny, self.nx))
        return torch.stack(canvases)


class PointPillarsLite(nn.Module):
    def __init__(self, nx=32, ny=32, channels=32, num_classes=2):
        super().__init__()
        self.pfn = PillarFeatureNet(out_channels=channels)
        self.scatter = PointPillarsScatter(channels, nx, ny)
        self.bev = nn.Sequential(
            nn.Conv2d(channels, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
            nn.Conv2d(64, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
        )
        self.heatmap = nn.Conv2d(64, num_classes, 1)

    def forward(self, points, num_points, coors, batch_size):
        pillars = self.pfn(points, num_points)
        bev = self.scatter(pillars, coors, batch_size)
        return self.heatmap(self.bev(bev))


def synthetic_frame(batch_size=2, pillars=150, max_pts=8, nx=32, ny=32, generator=None):
    coors, pts, nums = [], [], []
    for b in range(batch_size):
        flat = torch.randperm(nx * ny, generator=generator)[:pillars]
        coors.append(torch.stack([torch.full_like(flat, b), flat // nx, flat % nx], dim=1))
        pts.append(torch.randn(pillars, max_pts, 4, generator=generator))
        nums.append(torch.randint(1, max_pts + 1, (pillars,), generator=generator))
    target = torch.zeros(batch_size, 2, ny, nx)
    target[:, 0, 10:14, 8:12] = 1.0
    target[:, 1, 20:23, 18:24] = 1.0
    return torch.cat(pts), torch.cat(nums), torch.cat(coors), target


def train(steps=3):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = device.type == "cuda"
    gen = torch.Generator().manual_seed(0)
    model = PointPillarsLite().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler(device.type, enabled=use_amp)
    for step in range(steps):
        points, nums, coors, target = synthetic_frame(generator=gen)
        points, nums, coors, target = points.to(device), nums.to(device), coors.to(device), target.to(device)
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
            logits = model(points, nums, coors, batch_size=target.shape[0])
            loss = F.binary_cross_entropy_with_logits(logits, target)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    print("final loss", float(loss.detach()))


if __name__ == "__main__":
    train()
