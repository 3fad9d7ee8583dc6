# source: https://github.com/aladdinpersson/Machine-Learning-Collection/issues/58
# area: device placement
# bug: the gradient-penalty helper draws the interpolation weights alpha with torch.rand on the CPU and mixes them with the GPU real/fake batches
import torch
import torch.nn as nn

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
Z_DIM, IMG = 16, 8


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(Z_DIM, 64), nn.ReLU(), nn.Linear(64, IMG * IMG), nn.Tanh())

    def forward(self, z):
        return self.net(z).view(-1, 1, IMG, IMG)


class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(1, 8, 3, 2, 1), nn.LeakyReLU(0.2),
            nn.Conv2d(8, 16, 3, 2, 1), nn.LeakyReLU(0.2),
            nn.Flatten(), nn.Linear(16 * 2 * 2, 1),
        )

    def forward(self, x):
        return self.net(x)


def gradient_penalty(critic, real, fake):
    batch_size = real.size(0)
    alpha = torch.rand(batch_size, 1, 1, 1)  # expect: any
    interpolated = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    scores = critic(interpolated)
    grads = torch.autograd.grad(
        outputs=scores, inputs=interpolated,
        grad_outputs=torch.ones_like(scores), create_graph=True, retain_graph=True,
    )[0]
    grads = grads.view(batch_size, -1)
    return ((grads.norm(2, dim=1) - 1) ** 2).mean()


def real_batch(n):
    # blurry diagonal stripes as "real" images
    base = torch.linspace(-1, 1, IMG)
    img = (base[None, :] + base[:, None]).clamp(-1, 1)
    return img.expand(n, 1, IMG, IMG) + 0.1 * torch.randn(n, 1, IMG, IMG)


def main():
    gen, critic = Generator().to(device), Critic().to(device)
    opt_g = torch.optim.Adam(gen.parameters(), lr=1e-4, betas=(0.0, 0.9))
    opt_c = torch.optim.Adam(critic.parameters(), lr=1e-4, betas=(0.0, 0.9))
    lambda_gp, n_critic = 10.0, 2
    for it in range(9):
        for _ in range(n_critic):
            real = real_batch(32).to(device)
            fake = gen(torch.randn(32, Z_DIM, device=device)).detach()
            gp = gradient_penalty(critic, real, fake)
            loss_c = critic(fake).mean() - critic(real).mean() + lambda_gp * gp
            opt_c.zero_grad()
            loss_c.backward()
            opt_c.step()
        loss_g = -critic(gen(torch.randn(32, Z_DIM, device=device))).mean()
        opt_g.zero_grad()
        loss_g.backward()
        opt_g.step()
        if it % 4 == 0:
            print(f"iter {it} critic {loss_c.item():.3f} gp {gp.item():.3f} gen {loss_g.item():.3f}")


if __name__ == "__main__":
    main()
