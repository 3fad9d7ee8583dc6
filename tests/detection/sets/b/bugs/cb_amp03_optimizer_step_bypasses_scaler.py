# source: https://github.com/nerfstudio-project/nerfacc/issues/307
# area: AMP
# bug: the train-step helper backpropagates the scaled loss but then calls optimizer.step() directly instead of scaler.step(optimizer), so the update uses gradients still multiplied by the loss scale and inf/NaN steps are never skipped
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
use_amp = device.type == "cuda"


class PositionalEncoding(nn.Module):
    def __init__(self, n_freqs=6):
        super().__init__()
        self.register_buffer("freqs", 2.0 ** torch.arange(n_freqs) * math.pi)

    def forward(self, x):
        xb = x[..., None] * self.freqs
        return torch.cat([x, torch.sin(xb).flatten(-2), torch.cos(xb).flatten(-2)], dim=-1)


class RadianceMLP(nn.Module):
    def __init__(self, n_freqs=6, hidden=64):
        super().__init__()
        self.enc = PositionalEncoding(n_freqs)
        in_dim = 3 + 3 * 2 * n_freqs
        self.mlp = nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 4))

    def forward(self, pts):
        out = self.mlp(self.enc(pts))
        return torch.sigmoid(out[..., :3]), F.softplus(out[..., 3])


def render_rays(model, origins, dirs, n_samples=16, near=0.5, far=2.5):
    t = torch.linspace(near, far, n_samples, device=origins.device)
    pts = origins[:, None, :] + dirs[:, None, :] * t[None, :, None]
    rgb, sigma = model(pts)
    delta = (far - near) / n_samples
    alpha = 1.0 - torch.exp(-sigma * delta)
    trans = torch.cumprod(torch.cat([torch.ones_like(alpha[:, :1]), 1.0 - alpha[:, :-1] + 1e-10], dim=1), dim=1)
    weights = alpha * trans
    return (weights[..., None] * rgb).sum(dim=1)


def train_step(model, batch, optimizer, grad_scaler):
    origins, dirs, target = (b.to(device) for b in batch)
    with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
        rgb = render_rays(model, origins, dirs)
        loss = F.smooth_l1_loss(rgb.float(), target)
    optimizer.zero_grad()
    grad_scaler.scale(loss).backward()
    optimizer.step()  # expect: any
    return loss.item()


def random_rays(n=256):
    origins = torch.zeros(n, 3)
    dirs = F.normalize(torch.randn(n, 3), dim=-1)
    target = (dirs * 0.5 + 0.5).clamp(0, 1)
    return origins, dirs, target


if __name__ == "__main__":
    model = RadianceMLP().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2, eps=1e-15)
    grad_scaler = torch.amp.GradScaler("cuda", init_scale=2 ** 10, enabled=use_amp)
    for step in range(30):
        loss = train_step(model, random_rays(), optimizer, grad_scaler)
        if step % 10 == 0:
            print(f"step {step}: loss {loss:.4f}")
