# source: https://github.com/open-mmlab/mmdetection3d/issues/1053
# area: dtype
# bug: the BEV canvas is created in forward with the default float32 dtype while the pillar features are half under autocast; the index_put fails on GPU
import torch
import torch.nn as nn
import torch.nn.functional as F


class GridCfg:
    nx, ny = 32, 32
    x_range = (0.0, 32.0)
    y_range = (-16.0, 16.0)
    max_points = 16
    feat_dim = 32


def voxelize(points, cfg):
    """CPU preprocessing: group points into pillars, pad to max_points."""
    ix = ((points[:, 0] - cfg.x_range[0]) / (cfg.x_range[1] - cfg.x_range[0]) * cfg.nx).long().clamp(0, cfg.nx - 1)
    iy = ((points[:, 1] - cfg.y_range[0]) / (cfg.y_range[1] - cfg.y_range[0]) * cfg.ny).long().clamp(0, cfg.ny - 1)
    lin = iy * cfg.nx + ix
    coords, inverse = torch.unique(lin, return_inverse=True)
    order = torch.argsort(inverse, stable=True)
    counts = torch.bincount(inverse, minlength=coords.numel())
    starts = torch.cumsum(counts, 0) - counts
    slot = torch.arange(points.size(0)) - starts[inverse[order]]
    keep = slot < cfg.max_points
    pillars = torch.zeros(coords.numel(), cfg.max_points, points.size(1))
    pillars[inverse[order][keep], slot[keep]] = points[order][keep]
    return pillars, counts.clamp(max=cfg.max_points), coords


class PillarFeatureNet(nn.Module):
    def __init__(self, in_dim, out_dim):
        super().__init__()
        self.linear = nn.Linear(in_dim, out_dim, bias=False)
        self.norm = nn.BatchNorm1d(out_dim)

    def forward(self, pillars, counts):
        x = self.linear(pillars)
        x = F.relu(self.norm(x.transpose(1, 2)).transpose(1, 2))
        valid = torch.arange(pillars.size(1), device=pillars.device)[None, :] < counts[:, None]
        x = x.masked_fill(~valid[..., None], 0.0)
        return x.max(dim=1).values


class PointPillarsLite(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.pfn = PillarFeatureNet(4, cfg.feat_dim)
        self.backbone = nn.Sequential(
            nn.Conv2d(cfg.feat_dim, 64, 3, padding=1), nn.ReLU(),
            nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(),
        )
        self.head = nn.Conv2d(64, 1, 1)

    def scatter(self, feats, coords):
        canvas = torch.zeros(self.cfg.feat_dim, self.cfg.nx * self.cfg.ny, device=feats.device)  # expect[w]: any
        canvas[:, coords] = feats.t()  # expect[w]: any
        return canvas.view(self.cfg.feat_dim, self.cfg.ny, self.cfg.nx)

    def forward(self, batch):
        bev = []
        for pillars, counts, coords in batch:
            bev.append(self.scatter(self.pfn(pillars, counts), coords))
        return self.head(self.backbone(torch.stack(bev)))


def make_scene(cfg, gen):
    n = 600
    pts = torch.rand(n, 4, generator=gen)
    pts[:, 0] = pts[:, 0] * 32.0
    pts[:, 1] = pts[:, 1] * 32.0 - 16.0
    pillars, counts, coords = voxelize(pts, cfg)
    target = torch.zeros(1, cfg.nx * cfg.ny)
    target[0, coords] = (pillars[:, :, 2].amax(dim=1) > 0.8).float()
    return (pillars, counts, coords), target.view(1, cfg.ny, cfg.nx)


def main(steps=8, batch_size=4):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = device.type == "cuda"
    cfg = GridCfg()
    model = PointPillarsLite(cfg).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    gen = torch.Generator().manual_seed(0)
    total = torch.zeros((), device=device)
    for step in range(steps):
        scenes = [make_scene(cfg, gen) for _ in range(batch_size)]
        batch = [tuple(t.to(device) for t in s) for s, _ in scenes]
        target = torch.stack([t for _, t in scenes]).to(device)
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
            logits = model(batch)
            loss = F.binary_cross_entropy_with_logits(logits, target)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        total += loss.detach()
    print(f"mean loss: {(total / steps).item():.4f}")


if __name__ == "__main__":
    main()
