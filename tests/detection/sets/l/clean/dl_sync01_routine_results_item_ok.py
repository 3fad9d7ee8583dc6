# twin of: bugs/dl_sync01_routine_results_item.py
# area: transfer & sync
# correct: routines keep detached device tensors and the host reads them once per epoch in epoch_summary
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class ModelPlugin:
    """Minimal plugin base: routines report losses/results that are summarised per epoch."""

    def __init__(self):
        self.losses = {}
        self.results = {}

    def add_loss(self, name, value):
        self.losses[name] = value

    def add_results(self, **kwargs):
        for key, value in kwargs.items():
            self.results.setdefault(key, []).append(value.detach())

    def epoch_summary(self):
        keys = sorted(self.results)
        means = torch.stack([torch.stack(self.results[k]).float().mean() for k in keys]).tolist() if keys else []
        self.results = {}
        return dict(zip(keys, means))


class GAN(ModelPlugin):
    def __init__(self, z_dim=16, x_dim=32):
        super().__init__()
        self.z_dim = z_dim
        self.gen = nn.Sequential(nn.Linear(z_dim, 64), nn.ReLU(), nn.Linear(64, x_dim)).to(device)
        self.disc = nn.Sequential(nn.Linear(x_dim, 64), nn.LeakyReLU(0.2), nn.Linear(64, 1)).to(device)
        self.opt_g = torch.optim.Adam(self.gen.parameters(), lr=2e-4, betas=(0.5, 0.999))
        self.opt_d = torch.optim.Adam(self.disc.parameters(), lr=2e-4, betas=(0.5, 0.999))

    def discriminator_routine(self, real):
        z = torch.randn(real.size(0), self.z_dim, device=device)
        fake = self.gen(z).detach()
        d_real, d_fake = self.disc(real), self.disc(fake)
        loss = F.softplus(-d_real).mean() + F.softplus(d_fake).mean()
        self.add_loss("disc", loss)
        self.add_results(d_real=d_real.mean(), d_fake=d_fake.mean(), disc_loss=loss)
        self.opt_d.zero_grad(set_to_none=True)
        loss.backward()
        self.opt_d.step()

    def generator_routine(self, batch_size):
        z = torch.randn(batch_size, self.z_dim, device=device)
        loss = F.softplus(-self.disc(self.gen(z))).mean()
        self.add_loss("gen", loss)
        self.add_results(gen_loss=loss)
        self.opt_g.zero_grad(set_to_none=True)
        loss.backward()
        self.opt_g.step()

    def train_step(self, real, d_steps=2):
        for _ in range(d_steps):
            self.discriminator_routine(real)
        self.generator_routine(real.size(0))


def make_data(n=1024, x_dim=32, seed=0):
    g = torch.Generator().manual_seed(seed)
    centers = torch.randn(4, x_dim, generator=g) * 3
    idx = torch.randint(0, 4, (n,), generator=g)
    return centers[idx] + 0.3 * torch.randn(n, x_dim, generator=g)


def main():
    data = make_data()
    loader = torch.utils.data.DataLoader(data, batch_size=128, shuffle=True, drop_last=True)
    model = GAN()
    for epoch in range(3):
        for real in loader:
            model.train_step(real.to(device))
        summary = model.epoch_summary()
        print(f"epoch {epoch}: " + ", ".join(f"{k}={v:.3f}" for k, v in sorted(summary.items())))


if __name__ == "__main__":
    main()
