"""A vanilla GAN that learns a 1-D mixture of two Gaussians.

Real samples come from a NumPy helper, noise from a module-level helper, and the
real/fake targets are made with torch.ones / torch.zeros in the training step.
"""

import numpy as np
import torch
import torch.nn as nn

LATENT_DIM = 4
BATCH = 64


def sample_real(n, rng):
    """Draw n points from 0.5 * N(-2, 0.5) + 0.5 * N(2, 0.5)."""
    which = rng.integers(0, 2, size=n)
    centers = np.where(which == 0, -2.0, 2.0)
    return torch.from_numpy(centers + 0.5 * rng.standard_normal(n)).float().unsqueeze(1)


def sample_noise(n, dim=LATENT_DIM):
    return torch.rand(n, dim) * 2 - 1


class Generator(nn.Module):
    def __init__(self, hidden=16):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(LATENT_DIM, hidden), nn.LeakyReLU(0.1), nn.Linear(hidden, 1)
        )

    def forward(self, z):
        return self.net(z)


class Discriminator(nn.Module):
    def __init__(self, hidden=16):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(1, hidden), nn.LeakyReLU(0.1), nn.Linear(hidden, 1))

    def forward(self, x):
        return self.net(x)


def train_step(G, D, opt_g, opt_d, real, loss_fn):
    n = real.size(0)
    ones = torch.ones(n, 1)
    zeros = torch.zeros(n, 1)

    opt_d.zero_grad()
    fake = G(sample_noise(n))
    d_loss = loss_fn(D(real), ones) + loss_fn(D(fake.detach()), zeros)
    d_loss.backward()
    opt_d.step()

    opt_g.zero_grad()
    g_loss = loss_fn(D(fake), ones)
    g_loss.backward()
    opt_g.step()
    return d_loss.item(), g_loss.item()


def main():
    torch.manual_seed(42)
    rng = np.random.default_rng(42)
    G, D = Generator(), Discriminator()
    opt_g = torch.optim.Adam(G.parameters(), lr=1e-3, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(D.parameters(), lr=1e-3, betas=(0.5, 0.999))
    loss_fn = nn.BCEWithLogitsLoss()
    for step in range(40):
        d_loss, g_loss = train_step(G, D, opt_g, opt_d, sample_real(BATCH, rng), loss_fn)
        if step % 10 == 0:
            print(f"step {step}: D {d_loss:.4f} G {g_loss:.4f}")
    eval_real = sample_real(256, np.random.default_rng(7))
    with torch.no_grad():
        fake = G(torch.linspace(-1, 1, 256 * LATENT_DIM).view(256, LATENT_DIM))
        moment_gap = (fake.mean() - eval_real.mean()) ** 2 + (fake.std() - eval_real.std()) ** 2
    print(f"final loss {moment_gap.item():.8f}")


if __name__ == "__main__":
    main()
