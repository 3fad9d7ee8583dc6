# source: https://github.com/jmclong/random-fourier-features-pytorch/pull/4
# area: device placement
# bug: the frequency ladder is built with torch.arange on the CPU inside forward, so it meets CUDA coordinates and the multiply fails
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class PositionalEncoding(nn.Module):
    """Log-linear sinusoidal encoding of low dimensional coordinates."""

    def __init__(self, sigma=10.0, m=8):
        super().__init__()
        self.sigma = sigma
        self.m = m

    def out_features(self, in_features):
        return 2 * self.m * in_features

    def forward(self, v):
        j = torch.arange(self.m)  # expect: any
        coeffs = 2 * math.pi * self.sigma ** (j / self.m)
        vp = coeffs * v.unsqueeze(-1)
        vp_cat = torch.cat((torch.cos(vp), torch.sin(vp)), dim=-1)
        return vp_cat.flatten(-2, -1)


class CoordinateMLP(nn.Module):
    def __init__(self, in_features=2, hidden=64, out_features=3, sigma=10.0, m=8):
        super().__init__()
        self.encoding = PositionalEncoding(sigma=sigma, m=m)
        self.mlp = nn.Sequential(
            nn.Linear(self.encoding.out_features(in_features), hidden), nn.ReLU(),
            nn.Linear(hidden, hidden), nn.ReLU(),
            nn.Linear(hidden, out_features), nn.Sigmoid(),
        )

    def forward(self, coords):
        return self.mlp(self.encoding(coords))


def make_target_image(size=32):
    ys, xs = torch.meshgrid(torch.linspace(0, 1, size), torch.linspace(0, 1, size), indexing="ij")
    r = 0.5 + 0.5 * torch.sin(12 * xs) * torch.cos(9 * ys)
    g = (xs + ys) / 2
    b = ((xs - 0.5) ** 2 + (ys - 0.5) ** 2 < 0.1).float()
    image = torch.stack([r, g, b], dim=-1)
    coords = torch.stack([xs, ys], dim=-1).reshape(-1, 2)
    return coords, image.reshape(-1, 3)


def psnr(pred, target):
    return -10.0 * torch.log10(F.mse_loss(pred, target))


def fit(model, coords, pixels, steps=80, lr=3e-3, log_every=40):
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    for step in range(1, steps + 1):
        pred = model(coords)
        loss = F.mse_loss(pred, pixels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % log_every == 0:
            print(f"step {step}: psnr {psnr(pred.detach(), pixels).item():.2f} dB")


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    coords, pixels = make_target_image()
    coords, pixels = coords.to(device), pixels.to(device)
    model = CoordinateMLP().to(device)
    fit(model, coords, pixels)
    with torch.no_grad():
        hi_res, _ = make_target_image(48)
        rendered = model(hi_res.to(device)).reshape(48, 48, 3)
    print(f"rendered {tuple(rendered.shape)} mean {rendered.mean().item():.3f}")


if __name__ == "__main__":
    main()
