# source: https://github.com/menzelab/implicit-shape-reconstruction/issues/2
# area: porting & distributed
# bug: on a multi-GPU box the net is wrapped in nn.DataParallel and its state_dict is saved with "module." keys, which the plain eval net cannot load
import os
import tempfile
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class ShapeConfig:
    num_shapes: int = 16
    latent_dim: int = 32
    hidden: int = 64
    points_per_shape: int = 256
    batch_shapes: int = 8
    epochs: int = 2
    lr: float = 1e-3


class ImplicitDecoder(nn.Module):
    def __init__(self, latent_dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(latent_dim + 3, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, 1)

    def forward(self, latents, xyz):
        codes = latents[:, None, :].expand(-1, xyz.shape[1], -1)
        h = F.relu(self.fc1(torch.cat([codes, xyz], dim=-1)))
        h = F.relu(self.fc2(h))
        return self.out(h).squeeze(-1)


def make_sphere_data(cfg, device):
    g = torch.Generator().manual_seed(0)
    radii = 0.3 + 0.5 * torch.rand(cfg.num_shapes, generator=g)
    pts = torch.rand(cfg.num_shapes, cfg.points_per_shape, 3, generator=g) * 2 - 1
    occ = (pts.norm(dim=-1) < radii[:, None]).float()
    return pts.to(device), occ.to(device)


def train(cfg, device, ckpt_path):
    net = ImplicitDecoder(cfg.latent_dim, cfg.hidden).to(device)
    if torch.cuda.device_count() > 1:
        net = nn.DataParallel(net)
    latents = nn.Parameter(torch.zeros(cfg.num_shapes, cfg.latent_dim, device=device).normal_(0, 0.01))
    optim = torch.optim.Adam([{"params": net.parameters()}, {"params": [latents]}], lr=cfg.lr)
    pts, occ = make_sphere_data(cfg, device)
    for epoch in range(cfg.epochs):
        perm = torch.randperm(cfg.num_shapes, device=device)
        for idx in perm.split(cfg.batch_shapes):
            logits = net(latents[idx], pts[idx])
            loss = F.binary_cross_entropy_with_logits(logits, occ[idx])
            optim.zero_grad(set_to_none=True)
            loss.backward()
            optim.step()
        torch.save({"epoch": epoch, "net_state": net.state_dict(), "latents": latents.detach()}, ckpt_path)  # expect[k]: any


def evaluate(cfg, device, ckpt_path):
    ckpt = torch.load(ckpt_path, map_location=device)
    net = ImplicitDecoder(cfg.latent_dim, cfg.hidden).to(device)
    net.load_state_dict(ckpt["net_state"], strict=True)  # expect[k]: any
    net.eval()
    pts, occ = make_sphere_data(cfg, device)
    with torch.no_grad():
        pred = net(ckpt["latents"], pts) > 0
        iou = (pred & occ.bool()).sum() / (pred | occ.bool()).sum().clamp(min=1)
    return iou.item()


def main():
    cfg = ShapeConfig()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    with tempfile.TemporaryDirectory() as tmp:
        ckpt_path = os.path.join(tmp, "decoder_latest.pt")
        train(cfg, device, ckpt_path)
        print(f"eval IoU: {evaluate(cfg, device, ckpt_path):.3f}")


if __name__ == "__main__":
    main()
