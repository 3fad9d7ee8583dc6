# twin of: bugs/dm_sync09_ray_posenc_table.py
# area: transfer & sync
# correct: the sinusoid table is built once in __init__ and registered as a non-persistent buffer, so it moves with the module and is never re-uploaded per forward
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Config:
    feat_dim = 32
    hidden = 64
    n_samples = 32
    n_heads = 4


def posenc(d_hid, n_samples):
    def get_position_angle_vec(position):
        return [position / np.power(10000, 2 * (hid_j // 2) / d_hid) for hid_j in range(d_hid)]

    sinusoid_table = np.array([get_position_angle_vec(pos_i) for pos_i in range(n_samples)])
    sinusoid_table[:, 0::2] = np.sin(sinusoid_table[:, 0::2])
    sinusoid_table[:, 1::2] = np.cos(sinusoid_table[:, 1::2])
    return sinusoid_table


class RayDensityNet(nn.Module):
    def __init__(self, cfg, device):
        super().__init__()
        self.cfg = cfg
        self.device = device
        self.feat_proj = nn.Linear(cfg.feat_dim, cfg.hidden)
        self.attn = nn.MultiheadAttention(cfg.hidden, cfg.n_heads, batch_first=True)
        self.out_sigma = nn.Sequential(nn.Linear(cfg.hidden, 32), nn.ReLU(), nn.Linear(32, 1))
        self.out_rgb = nn.Linear(cfg.hidden, 3)
        table = torch.from_numpy(posenc(cfg.hidden, cfg.n_samples)).float().unsqueeze(0)
        self.register_buffer("pos_table", table, persistent=False)

    def forward(self, ray_feats, mask):
        n_rays, n_samples, _ = ray_feats.shape
        h = F.elu(self.feat_proj(ray_feats))
        h = h + self.pos_table[:, :n_samples]
        h, _ = self.attn(h, h, h, key_padding_mask=~mask)
        sigma = F.relu(self.out_sigma(h)).squeeze(-1).masked_fill(~mask, 0.0)
        rgb = torch.sigmoid(self.out_rgb(h))
        return rgb, sigma


def composite(rgb, sigma, z_vals):
    deltas = torch.diff(z_vals, dim=-1, append=z_vals[..., -1:] + 1e10)
    alpha = 1.0 - torch.exp(-sigma * deltas)
    trans = torch.cumprod(torch.cat([torch.ones_like(alpha[:, :1]), 1.0 - alpha + 1e-10], -1), -1)[:, :-1]
    weights = alpha * trans
    return (weights.unsqueeze(-1) * rgb).sum(1), weights


def train(model, steps, n_rays=128):
    cfg = model.cfg
    opt = torch.optim.Adam(model.parameters(), lr=5e-4)
    running = torch.zeros((), device=device)
    for step in range(steps):
        feats = torch.randn(n_rays, cfg.n_samples, cfg.feat_dim, device=device)
        mask = torch.rand(n_rays, cfg.n_samples, device=device) > 0.1
        mask[:, 0] = True
        z_vals = torch.linspace(2.0, 6.0, cfg.n_samples, device=device).expand(n_rays, -1)
        target = torch.sigmoid(feats[:, :, :3].mean(1))
        rgb, sigma = model(feats, mask)
        pred, _ = composite(rgb, sigma, z_vals)
        loss = F.mse_loss(pred, target)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        running += loss.detach()
    return (running / steps).item()


if __name__ == "__main__":
    torch.manual_seed(0)
    model = RayDensityNet(Config(), device).to(device)
    print("mean loss:", round(train(model, steps=20), 5))
