# twin of: bugs/dg_sync01_gan_loss_tracker.py
# area: transfer & sync
# correct: losses are accumulated as detached device tensors and read back to the host only once per print_freq steps
import torch
import torch.nn as nn
from dataclasses import dataclass


@dataclass
class GANConfig:
    latent_dim: int = 16
    data_dim: int = 32
    hidden: int = 64
    batch_size: int = 64
    iterations: int = 40
    print_freq: int = 20
    lr: float = 2e-4


def mlp(inp, hidden, out):
    return nn.Sequential(nn.Linear(inp, hidden), nn.LeakyReLU(0.2),
                         nn.Linear(hidden, hidden), nn.LeakyReLU(0.2),
                         nn.Linear(hidden, out))


class LossTracker:
    """Keeps running sums of every named loss between two log lines."""

    def __init__(self):
        self.totals = {}
        self.count = 0

    def update(self, losses):
        for name, value in losses.items():
            self.totals[name] = self.totals.get(name, 0.0) + value.detach()
        self.count += 1

    def summary(self):
        out = {k: v.item() / max(self.count, 1) for k, v in self.totals.items()}
        self.totals, self.count = {}, 0
        return out


class GANTrainer:
    def __init__(self, cfg, device):
        self.cfg = cfg
        self.device = device
        self.gen = mlp(cfg.latent_dim, cfg.hidden, cfg.data_dim).to(device)
        self.disc = mlp(cfg.data_dim, cfg.hidden, 1).to(device)
        self.opt_g = torch.optim.Adam(self.gen.parameters(), lr=cfg.lr, betas=(0.5, 0.999))
        self.opt_d = torch.optim.Adam(self.disc.parameters(), lr=cfg.lr, betas=(0.5, 0.999))
        self.criterion = nn.BCEWithLogitsLoss()
        self.tracker = LossTracker()
        self.center = torch.linspace(-1.0, 1.0, cfg.data_dim, device=device)

    def real_batch(self):
        noise = torch.randn(self.cfg.batch_size, self.cfg.data_dim, device=self.device)
        return self.center + 0.1 * noise

    def step(self):
        real = self.real_batch()
        z = torch.randn(self.cfg.batch_size, self.cfg.latent_dim, device=self.device)
        fake = self.gen(z)
        ones = torch.ones(self.cfg.batch_size, 1, device=self.device)
        zeros = torch.zeros_like(ones)

        self.opt_d.zero_grad(set_to_none=True)
        d_real = self.criterion(self.disc(real), ones)
        d_fake = self.criterion(self.disc(fake.detach()), zeros)
        d_loss = 0.5 * (d_real + d_fake)
        d_loss.backward()
        self.opt_d.step()

        self.opt_g.zero_grad(set_to_none=True)
        g_loss = self.criterion(self.disc(fake), ones)
        g_loss.backward()
        self.opt_g.step()
        return {"D_real": d_real, "D_fake": d_fake, "G_GAN": g_loss}

    def train(self):
        for it in range(1, self.cfg.iterations + 1):
            losses = self.step()
            self.tracker.update(losses)
            if it % self.cfg.print_freq == 0:
                stats = self.tracker.summary()
                msg = " ".join(f"{k}={v:.4f}" for k, v in stats.items())
                print(f"[iter {it}] {msg}")


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    GANTrainer(GANConfig(), device).train()


if __name__ == "__main__":
    main()
