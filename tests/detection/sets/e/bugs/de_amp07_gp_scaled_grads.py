# source: https://github.com/lucidrains/stylegan2-pytorch/pull/101
# area: AMP
# bug: the gradient penalty is computed from autograd.grad of the scaled critic output without dividing by the scale, so on a GPU the penalty sees gradients ~65536x too large
import torch
import torch.nn as nn


class Generator(nn.Module):
    def __init__(self, z_dim=16, out_dim=2):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(z_dim, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, out_dim))

    def forward(self, z):
        return self.net(z)


class Critic(nn.Module):
    def __init__(self, in_dim=2):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(in_dim, 64), nn.LeakyReLU(0.2), nn.Linear(64, 64), nn.LeakyReLU(0.2), nn.Linear(64, 1))

    def forward(self, x):
        return self.net(x)


def sample_ring(n, device, modes=8):
    k = torch.randint(0, modes, (n,), device=device).float()
    ang = 2 * torch.pi * k / modes
    pts = torch.stack([ang.cos(), ang.sin()], dim=1) * 2.0
    return pts + 0.05 * torch.randn_like(pts)


class WGANGP:
    def __init__(self, device, gp_weight=10.0, z_dim=16):
        self.device = device
        self.amp = device.type == "cuda"
        self.z_dim = z_dim
        self.gp_weight = gp_weight
        self.G = Generator(z_dim).to(device)
        self.D = Critic().to(device)
        self.opt_g = torch.optim.Adam(self.G.parameters(), lr=1e-4, betas=(0.5, 0.9))
        self.opt_d = torch.optim.Adam(self.D.parameters(), lr=1e-4, betas=(0.5, 0.9))
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.amp)

    def gradient_penalty(self, real, fake):
        alpha = torch.rand(real.size(0), 1, device=self.device)
        interp = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
        with torch.autocast(self.device.type, dtype=torch.float16, enabled=self.amp):
            score = self.D(interp)
        grads = torch.autograd.grad(outputs=self.scaler.scale(score.sum()), inputs=interp, create_graph=True)[0]  # expect: any
        return ((grads.norm(2, dim=1) - 1) ** 2).mean()

    def critic_step(self, real):
        z = torch.randn(real.size(0), self.z_dim, device=self.device)
        with torch.autocast(self.device.type, dtype=torch.float16, enabled=self.amp):
            fake = self.G(z).detach()
            d_loss = self.D(fake).mean() - self.D(real).mean()
        gp = self.gradient_penalty(real, fake.float())
        loss = d_loss.float() + self.gp_weight * gp
        self.opt_d.zero_grad(set_to_none=True)
        self.scaler.scale(loss).backward()
        self.scaler.step(self.opt_d)
        self.scaler.update()
        return loss.detach()

    def generator_step(self, batch):
        z = torch.randn(batch, self.z_dim, device=self.device)
        with torch.autocast(self.device.type, dtype=torch.float16, enabled=self.amp):
            g_loss = -self.D(self.G(z)).mean()
        self.opt_g.zero_grad(set_to_none=True)
        self.scaler.scale(g_loss).backward()
        self.scaler.step(self.opt_g)
        self.scaler.update()
        return g_loss.detach()


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    gan = WGANGP(device)
    for it in range(20):
        d_loss = gan.critic_step(sample_ring(128, device))
        if it % 5 == 4:
            g_loss = gan.generator_step(128)
    print("critic loss", d_loss.item(), "gen loss", g_loss.item())


if __name__ == "__main__":
    main()
