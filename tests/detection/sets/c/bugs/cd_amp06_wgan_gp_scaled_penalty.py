# source: https://github.com/pytorch/pytorch/pull/44667
# area: AMP
# bug: the gradient penalty is built from autograd.grad of the *scaled* critic output and never divided by the scale, so on a GPU it constrains the critic gradient norm to 1/scale instead of 1 and overflows until the loss scale collapses
import math

import torch
import torch.nn as nn


def ring_of_gaussians(n, modes=8, radius=2.0, std=0.05, device="cpu"):
    k = torch.randint(0, modes, (n,), device=device)
    angle = k.float() * (2 * math.pi / modes)
    centers = torch.stack([angle.cos(), angle.sin()], dim=1) * radius
    return centers + std * torch.randn(n, 2, device=device)


def mlp(inp, out, width=128):
    return nn.Sequential(nn.Linear(inp, width), nn.LeakyReLU(0.2), nn.Linear(width, width),
                         nn.LeakyReLU(0.2), nn.Linear(width, out))


class WGANGP:
    def __init__(self, device, z_dim=8, gp_weight=10.0, n_critic=3):
        self.device = device
        self.z_dim = z_dim
        self.gp_weight = gp_weight
        self.n_critic = n_critic
        self.use_amp = device.type == "cuda"
        self.gen = mlp(z_dim, 2).to(device)
        self.critic = mlp(2, 1).to(device)
        self.opt_g = torch.optim.Adam(self.gen.parameters(), lr=1e-4, betas=(0.5, 0.9))
        self.opt_d = torch.optim.Adam(self.critic.parameters(), lr=1e-4, betas=(0.5, 0.9))
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.use_amp)

    def autocast(self):
        return torch.autocast(device_type=self.device.type, dtype=torch.float16, enabled=self.use_amp)

    def gradient_penalty(self, real, fake):
        alpha = torch.rand(real.shape[0], 1, device=self.device)
        interp = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
        with self.autocast():
            score = self.critic(interp)
        (grads,) = torch.autograd.grad(self.scaler.scale(score.sum()), interp, create_graph=True)  # expect[w]: any
        with self.autocast():
            return ((grads.norm(2, dim=1) - 1.0) ** 2).mean()  # expect[w]: any

    def train_step(self, batch_size=128):
        for _ in range(self.n_critic):
            real = ring_of_gaussians(batch_size, device=self.device)
            z = torch.randn(batch_size, self.z_dim, device=self.device)
            with self.autocast():
                fake = self.gen(z).detach()
                w_dist = self.critic(real).mean() - self.critic(fake).mean()
            gp = self.gradient_penalty(real, fake.float())
            loss_d = -w_dist + self.gp_weight * gp
            self.opt_d.zero_grad(set_to_none=True)
            self.scaler.scale(loss_d).backward()
            self.scaler.step(self.opt_d)
            self.scaler.update()

        z = torch.randn(batch_size, self.z_dim, device=self.device)
        with self.autocast():
            loss_g = -self.critic(self.gen(z)).mean()
        self.opt_g.zero_grad(set_to_none=True)
        self.scaler.scale(loss_g).backward()
        self.scaler.step(self.opt_g)
        self.scaler.update()
        return w_dist.detach(), gp.detach()


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    gan = WGANGP(device)
    for it in range(40):
        w, gp = gan.train_step()
        if it % 20 == 19:
            print(f"iter {it + 1}: W-dist {w.item():.3f}  GP {gp.item():.3f}")
